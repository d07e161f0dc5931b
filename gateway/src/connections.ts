import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '@ots/shared/logger';

/** When the file limit cannot be read (not Linux), the cap an unconfigured gateway takes. */
const FALLBACK_MAX_CONNECTIONS = 4_096;
/** The share of the file limit connections may take; the rest is for pools, subgraph fetches and files. */
const FILE_LIMIT_SHARE = 0.8;

/** The soft limit on open files of this process, when the platform says. */
export function openFileLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((row) => row.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    return soft && /^\d+$/.test(soft) ? Number(soft) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Contract section 8: a cap on open connections below the process's file limit. A configured cap
 * above the limit's share is lowered to it, since past it the pools and health checks fail with EMFILE.
 */
export function connectionCap(configured: number | undefined, fileLimit: number | undefined, logger: Logger): number {
  const ceiling = fileLimit === undefined ? undefined : Math.max(1, Math.floor(fileLimit * FILE_LIMIT_SHARE));
  if (configured === undefined) return ceiling ?? FALLBACK_MAX_CONNECTIONS;
  if (ceiling !== undefined && configured > ceiling) {
    logger.warn({ configured, fileLimit, cap: ceiling }, 'MAX_CONNECTIONS is above what the file limit allows; lowered');
    return ceiling;
  }
  return configured;
}

interface Connection {
  socket: Socket;
  address: string;
  /** The request being answered on it, until its response is done. */
  request: IncomingMessage | undefined;
  /** Upgraded: the socket its upgrade request came on (the TLS one over HTTPS), whose server says whether it is in use. */
  upgraded: Duplex | undefined;
}

/** Upgraded sockets whose server tells whether they are in use; one that does not say is in use while it is open. */
const upgradeInUse = new WeakMap<Duplex, () => boolean>();

/**
 * Tells the cap how to see whether an upgraded connection is in use (a WebSocket is while it carries
 * a subscription): when it is not, it may be closed for a new connection, as an idle keep-alive one is.
 */
export function reportUpgradeUse(socket: Duplex, inUse: () => boolean): void {
  upgradeInUse.set(socket, inUse);
}

/** The request's headers are in and its body too, and its answer is being made, or its upgrade's server says so: a connection in use. */
const inUse = (connection: Connection) =>
  connection.upgraded ? (upgradeInUse.get(connection.upgraded)?.() ?? true) : connection.request !== undefined && connection.request.complete;

/**
 * Keeps at most `cap` connections open. At the cap, a new connection takes the place of one that is
 * not in use — still sending its headers or body, idle between requests, or a WebSocket without a
 * subscription — taken from the address holding the most connections, least recently active first;
 * when every connection is in use, the new one is closed. So connections that send slowly or nothing,
 * from one address or many, cannot keep out a health check or another client, whose requests arrive
 * whole and are answered at once. Addresses are kept in buckets by how many connections they hold, so
 * that a flood from many addresses costs no sort of them all at each new connection.
 */
export function limitConnections(server: Server, cap: number): void {
  // Per address, in order of last activity (a Map keeps insertion order; activity re-inserts).
  const byAddress = new Map<string, Map<string, Connection>>();
  const byKey = new Map<string, Connection>();
  // The HTTPS server hands requests the TLS socket and `connection` the TCP one; both have the same ends.
  const keyOf = (socket: Socket) => `${socket.remoteAddress}|${socket.remotePort}`;

  // Addresses by how many connections each holds, and the most any holds.
  const byCount = new Map<number, Set<string>>();
  let mostConnections = 0;
  const recount = (address: string, from: number, to: number) => {
    const bucket = byCount.get(from);
    bucket?.delete(address);
    if (bucket?.size === 0) byCount.delete(from);
    if (to > 0) {
      if (!byCount.has(to)) byCount.set(to, new Set());
      byCount.get(to)!.add(address);
    }
    // Counts move by one: the most is `to` when it rose, or one less when the last address at the most lost one.
    if (to > mostConnections) mostConnections = to;
    else if (from === mostConnections && !byCount.has(from)) mostConnections = to;
  };

  const touch = (key: string, connection: Connection) => {
    const own = byAddress.get(connection.address);
    if (!own?.delete(key)) return;
    own.set(key, connection);
  };

  const forget = (key: string, connection: Connection) => {
    if (byKey.get(key) !== connection) return;
    byKey.delete(key);
    const own = byAddress.get(connection.address);
    if (!own?.delete(key)) return;
    recount(connection.address, own.size + 1, own.size);
    if (own.size === 0) byAddress.delete(connection.address);
  };

  const evictOne = (): boolean => {
    for (let count = mostConnections; count > 0; count -= 1) {
      for (const address of byCount.get(count) ?? []) {
        for (const [key, connection] of byAddress.get(address) ?? []) {
          if (inUse(connection)) continue;
          forget(key, connection);
          connection.socket.destroy();
          return true;
        }
      }
    }
    return false;
  };

  server.on('connection', (socket: Socket) => {
    // Without an address the peer has already gone.
    const address = socket.remoteAddress;
    if (!address || (byKey.size >= cap && !evictOne())) {
      socket.destroy();
      return;
    }
    const key = keyOf(socket);
    const connection: Connection = { socket, address, request: undefined, upgraded: undefined };
    byKey.set(key, connection);
    if (!byAddress.has(address)) byAddress.set(address, new Map());
    const own = byAddress.get(address)!;
    own.set(key, connection);
    recount(address, own.size - 1, own.size);
    socket.once('close', () => forget(key, connection));
  });

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const key = keyOf(request.socket);
    const connection = byKey.get(key);
    if (!connection) return;
    connection.request = request;
    touch(key, connection);
    response.once('close', () => {
      if (connection.request === request) connection.request = undefined;
      touch(key, connection);
    });
  });

  // Listening for `upgrade` makes Node hand upgrades over instead of answering them as requests, so
  // upgrades are only watched once something serves them.
  let watchingUpgrades = false;
  server.on('newListener', (event) => {
    if (event !== 'upgrade' || watchingUpgrades) return;
    watchingUpgrades = true;
    server.prependListener('upgrade', (request: IncomingMessage) => {
      const connection = byKey.get(keyOf(request.socket));
      if (connection) connection.upgraded = request.socket;
    });
  });
}
