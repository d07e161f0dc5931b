import { lookup as dnsLookup } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where webhooks may go (SSRF defence, contract section 6). In production only public unicast
 * addresses: not loopback, private (RFC 1918, unique local), link-local (169.254/16, which holds
 * the cloud metadata services, fe80::/10), carrier-grade NAT (100.64/10, Alibaba's metadata),
 * unspecified, multicast, broadcast or reserved ranges. ipaddr.js classifies by the IANA
 * registries, which a hand-kept list of CIDRs would drift from; IPv4-mapped IPv6 addresses
 * (::ffff:10.0.0.1) are judged as the IPv4 address they carry.
 *
 * The check runs when an endpoint is saved and again at every connection: the delivery's DNS
 * look-up goes through `guardedLookup`, so the socket connects to the very address that was checked
 * (a name that re-resolves to 127.0.0.1 after it was saved — DNS rebinding — is refused then).
 */

/** The range an address belongs to when it is not public unicast, else undefined. */
export function nonPublicRange(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return 'an unparsable address';
  }
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = parsed.range();
  return range === 'unicast' ? undefined : `a ${range} address (${address})`;
}

/** For a host that is an IP literal: why it is refused, or undefined (also for names, checked by resolving). */
export function checkLiteralAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? nonPublicRange(bare) : undefined;
}

export class AddressNotAllowedError extends Error {
  readonly code = 'EADDRNOTALLOWED';
}

/**
 * Resolves a name and refuses it if any of its addresses is not public: a name with one private
 * address among public ones would let a rebinding resolver pick it.
 */
export async function resolvePublicAddresses(hostname: string): Promise<{ address: string; family: number }[]> {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  const addresses = await new Promise<{ address: string; family: number }[]>((resolve, reject) =>
    dnsLookup(bare, { all: true }, (error, found) => (error ? reject(error) : resolve(found))),
  );
  for (const { address } of addresses) {
    const range = nonPublicRange(address);
    if (range) throw new AddressNotAllowedError(`${hostname} resolves to ${range}`);
  }
  if (addresses.length === 0) throw new AddressNotAllowedError(`${hostname} resolves to no address`);
  return addresses;
}

/**
 * The `lookup` of every delivery's socket. In production it answers only addresses that passed
 * `resolvePublicAddresses`; outside production it is the ordinary look-up (tests receive on 127.0.0.1).
 * It serves both forms Node asks for: one address, or all of them (happy eyeballs).
 */
export function guardedLookup(production: boolean): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const resolved = production
      ? resolvePublicAddresses(hostname)
      : new Promise<{ address: string; family: number }[]>((resolve, reject) =>
          dnsLookup(hostname, { all: true }, (error, found) => (error ? reject(error) : resolve(found))),
        );
    resolved.then(
      (addresses) => {
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: unknown) => callback(error),
    );
  }) as LookupFunction;
}
