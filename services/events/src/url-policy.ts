import { lookup as dnsLookup } from 'node:dns';
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
 * Resolves a name and refuses it if any of its addresses is not public: a name with one private
 * address among public ones would let a rebinding resolver pick it.
 */
export async function resolvePublicAddresses(hostname: string): Promise<{ address: string; family: number }[]> {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  const addresses = await new Promise<{ address: string; family: number }[]>((resolve, reject) =>
    dnsLookup(bare, { all: true }, (error, found) => (error ? reject(error) : resolve(found))),
  );
  // The refusal names no address: a client that names an internal host must not learn how it resolves.
  if (addresses.some(({ address }) => nonPublicRange(address))) throw new AddressNotAllowedError(`${hostname} resolves to a non-public address`);
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
