import { BADNAME, BADQUERY, FORMERR, lookup as dnsLookup, NODATA, NOTFOUND, promises as dnsPromises } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where webhooks may go (SSRF defence, contract section 6). In production only public unicast
 * addresses: not loopback, private (RFC 1918, unique local), link-local (169.254/16, which holds
 * the cloud metadata services, fe80::/10), carrier-grade NAT (100.64/10, Alibaba's metadata),
 * unspecified, multicast, broadcast or reserved ranges. ipaddr.js classifies by the IANA
 * registries, which a hand-kept list of CIDRs would drift from. IPv6 must also be global unicast
 * (2000::/3): the IPv4-mapped and IPv4-compatible forms (::ffff:127.0.0.1, ::127.0.0.1, and every
 * hex spelling of them, ::ffff:7f00:1) are refused whatever they carry, since a host's stack turns
 * them into the IPv4 address they hold; NAT64, SIIT, 6to4 and Teredo prefixes, which embed IPv4
 * too, are special ranges that ipaddr.js names.
 *
 * The check runs when an endpoint is saved and again at every connection: the delivery's DNS
 * look-up goes through `guardedLookup`, so the socket connects to the very address that was checked
 * (a name that re-resolves to 127.0.0.1 after it was saved — DNS rebinding — is refused then).
 *
 * Names are resolved with c-ares (`Resolver.resolve4`/`resolve6`), not `dns.lookup`: `dns.lookup`
 * is getaddrinfo on libuv's pool of 4 threads, and a name whose DNS never answers holds a thread for
 * glibc's retries, beyond the attempt's deadline (which only closes the socket), so a few clients'
 * endpoints at such names would hold every thread and every other endpoint's look-ups would wait
 * past their own deadlines. c-ares runs on the event loop, and each look-up is cancelled when its
 * attempt ends. It does not read /etc/hosts, which a client's name has no business in; `localhost`
 * is refused without asking (RFC 6761).
 */

const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
const IPV4_MAPPED = ipaddr.parseCIDR('::ffff:0:0/96');
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/** The IPv4 address in an IPv6 address's last 32 bits. */
function carriedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 {
  const parts = address.parts;
  return new ipaddr.IPv4([parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff]);
}

/** The range an address belongs to when it is not public unicast, else undefined. */
export function nonPublicRange(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return 'an unparsable address';
  }
  const range = parsed.range();
  if (parsed.kind() === 'ipv4') return range === 'unicast' ? undefined : `a ${range} address (${address})`;
  const ipv6 = parsed as ipaddr.IPv6;
  const form = ipv6.match(IPV4_MAPPED) ? 'IPv4-mapped' : range === 'unicast' && ipv6.match(IPV4_COMPATIBLE) ? 'IPv4-compatible' : undefined;
  if (form) {
    const carried = carriedIPv4(ipv6);
    return `an ${form} IPv6 address (${address}, carrying ${carried.range()} ${carried.toString()})`;
  }
  if (range !== 'unicast') return `a ${range} address (${address})`;
  return ipv6.match(IPV6_GLOBAL_UNICAST) ? undefined : `an IPv6 address outside global unicast 2000::/3 (${address})`;
}

/** For a host that is an IP literal: why it is refused, or undefined (also for names, checked by resolving). */
export function checkLiteralAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? nonPublicRange(bare) : undefined;
}

class AddressNotAllowedError extends Error {
  readonly code = 'EADDRNOTALLOWED';
}

/**
 * Answers that say the name has no address, now or later (none, or a name DNS cannot even ask for,
 * such as `foo..example`, which the URL parser lets through): the URL is refused, not retried.
 * Anything else (a timeout, a refusal, a server failure) says nothing of the name.
 */
const NO_SUCH_NAME = new Set<string>([NOTFOUND, NODATA, BADNAME, BADQUERY, FORMERR]);

/** Each name server is asked TRIES times, TRY_TIMEOUT_MS each: a second server is asked well within the 10 s. */
const TRY_TIMEOUT_MS = 2_000;
const TRIES = 2;

export interface ResolveOptions {
  /** Cancels the look-up: the end of the attempt it is for, or the save's time limit. */
  signal: AbortSignal;
  /** Name servers to ask instead of the system's (tests point them at one that never answers). */
  servers?: readonly string[];
}

function dnsError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

/**
 * A name's IPv4 and IPv6 addresses through c-ares, until `options.signal`. A family that does
 * not answer while the other does is left out, as getaddrinfo leaves it out: the connection uses
 * only the addresses returned, all of them checked. Fails with ENOTFOUND when the name has no
 * address, EAI_AGAIN when DNS did not answer (in time): the codes getaddrinfo gives.
 */
async function resolveName(name: string, options: ResolveOptions): Promise<{ address: string; family: number }[]> {
  const resolver = new dnsPromises.Resolver({ timeout: TRY_TIMEOUT_MS, tries: TRIES });
  if (options.servers) resolver.setServers(options.servers);
  const cancel = () => resolver.cancel();
  options.signal.addEventListener('abort', cancel, { once: true });
  try {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
    const addresses = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (addresses.length > 0) return addresses;
    const unanswered = [v4, v6]
      .map((settled) => (settled.status === 'rejected' ? (settled.reason as NodeJS.ErrnoException).code : undefined))
      .find((code) => code !== undefined && !NO_SUCH_NAME.has(code));
    if (unanswered) throw dnsError('EAI_AGAIN', `${name}: no answer from DNS (${unanswered})`);
    throw dnsError('ENOTFOUND', `${name} has no address`);
  } finally {
    options.signal.removeEventListener('abort', cancel);
  }
}

/** RFC 6761: `localhost` and the names under it are loopback, answered from /etc/hosts rather than DNS. */
function isLocalhostName(name: string): boolean {
  const lower = name.toLowerCase().replace(/\.$/, '');
  return lower === 'localhost' || lower.endsWith('.localhost');
}

/**
 * Resolves a name and refuses it if any of its addresses is not public: a name with one private
 * address among public ones would let a rebinding resolver pick it. A literal is its own address.
 */
export async function resolvePublicAddresses(hostname: string, options: ResolveOptions): Promise<{ address: string; family: number }[]> {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  // The refusal names no address, nor whether the name exists: a client that names internal hosts
  // (the cluster's service names) must learn neither how they resolve nor which of them exist.
  const refused = new AddressNotAllowedError(`${hostname} does not resolve to public addresses only`);
  if (isLocalhostName(bare)) throw refused;
  const addresses = isIP(bare) ? [{ address: bare, family: isIP(bare) }] : await resolveName(bare, options).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ENOTFOUND' ? refused : error;
  });
  if (addresses.some(({ address }) => nonPublicRange(address))) throw refused;
  return addresses;
}

/**
 * The `lookup` of every delivery's socket. In production it answers only addresses that passed
 * `resolvePublicAddresses`, within the attempt (`options`). Outside production it is the ordinary
 * look-up, /etc/hosts included, so that tests and local development reach receivers on localhost
 * or a compose file's names (127.0.0.1 is a literal: never looked up).
 * It serves both forms Node asks for: one address, or all of them (happy eyeballs).
 */
export function guardedLookup(production: boolean, options: ResolveOptions): LookupFunction {
  return ((hostname: string, lookupOptions: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const resolved = production
      ? resolvePublicAddresses(hostname, options)
      : new Promise<{ address: string; family: number }[]>((resolve, reject) =>
          dnsLookup(hostname, { all: true }, (error, found) => (error ? reject(error) : resolve(found))),
        );
    resolved.then(
      (addresses) => {
        if (lookupOptions.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: unknown) => callback(error),
    );
  }) as LookupFunction;
}
