// Where a notification may be sent (docs/notifications.md, "Where notifications may go"): the URL's form, and
// the addresses its host is or resolves to. Checked when a configuration is created or changed, and again
// for the address each delivery connects to, so that a name that re-resolves meanwhile is caught too.
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Why a URL or an address is refused, in a sentence a client can act on. */
export class DestinationRefusedError extends Error {}

// Every range of IANA's special-purpose address registries that is not globally reachable, beside multicast:
// this host and the unspecified address, private, carrier-grade NAT (shared), loopback, link-local (the cloud
// metadata address among them), IETF protocol assignments, documentation (TEST-NET-1 to 3, 2001:db8::/32,
// 3fff::/20), benchmarking (198.18.0.0/15, 2001:2::/48 inside 2001::/23), reserved (240.0.0.0/4 and the
// broadcast address), discard-only, unique-local, SRv6 SIDs, and the translation and 6to4 prefixes, whose
// addresses stand for IPv4 ones. BlockList also judges IPv4-mapped IPv6 (::ffff:a.b.c.d) by its IPv4 rules.
const REFUSED = new BlockList();
for (const [net, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) REFUSED.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [['::', 128], ['::1', 128], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32],
  ['2002::', 16], ['3fff::', 20], ['5f00::', 16], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) {
  REFUSED.addSubnet(net, bits, 'ipv6');
}

/** Whether `address` (an IPv4 or IPv6 literal) is one no notification may reach. */
export function refusedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return REFUSED.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export interface DestinationPolicy {
  /** NOTIFY_ALLOW_HOSTS: hosts compared with the URL's host as written (lower case), with or without its port. */
  allowHosts: readonly string[];
  /** Resolves a name to its addresses (the system's resolver unless a test gives another). */
  lookup?: (host: string) => Promise<string[]>;
}

const systemLookup = async (host: string) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** The host as the URL's text writes it (lower case), before the URL parser normalises a numeric one. */
function writtenHost(text: string): string | null {
  const authority = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#\\]*)/.exec(text)?.[1];
  if (authority === undefined) return null;
  const host = authority.slice(authority.lastIndexOf('@') + 1);
  const bracket = host.startsWith('[') ? host.indexOf(']') : -1;
  return (bracket >= 0 ? host.slice(0, bracket + 1) : host.replace(/:\d*$/, '')).toLowerCase();
}

/** Whether the URL's host is listed in NOTIFY_ALLOW_HOSTS (its name, or its name and port). */
export function allowListed(url: URL, policy: DestinationPolicy): boolean {
  return policy.allowHosts.includes(url.hostname) || policy.allowHosts.includes(url.host);
}

/**
 * Parses a notification URL and checks its form: `https`, or `http` to an allow-listed host; no user or
 * password; a numeric host only as a dotted quad or an IPv6 literal. Throws DestinationRefusedError.
 */
export function parseDestination(text: string, policy: DestinationPolicy): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DestinationRefusedError('url is not an absolute URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new DestinationRefusedError(`url must be https:// (not ${url.protocol}//).`);
  if (url.username !== '' || url.password !== '') throw new DestinationRefusedError('url must not carry a user name or password.');
  // The parser reads 2130706433, 0x7f.1 and 0177.0.0.1 as 127.0.0.1: a numeric host written any other way
  // than a dotted quad is refused, listed or not.
  const written = writtenHost(text);
  if (isIP(url.hostname) === 4 && written !== url.hostname) {
    throw new DestinationRefusedError(`url's host ${JSON.stringify(written)} is an address written in another form than a dotted quad.`);
  }
  if (url.protocol === 'http:' && !allowListed(url, policy)) throw new DestinationRefusedError('url must be https:// (plain http only to a host in NOTIFY_ALLOW_HOSTS).');
  return url;
}

/** The URL's host as an address literal (IPv6 without brackets), or null for a name. */
const literal = (url: URL) => {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) === 0 ? null : host;
};

/**
 * Checks where the URL leads: unless its host is allow-listed, the host and every address it resolves to
 * must be public. Throws DestinationRefusedError naming the address.
 */
export async function checkDestination(url: URL, policy: DestinationPolicy): Promise<void> {
  if (allowListed(url, policy)) return;
  const address = literal(url);
  const addresses = address !== null ? [address] : await (policy.lookup ?? systemLookup)(url.hostname).catch((e: Error) => {
    throw new DestinationRefusedError(`url's host ${url.hostname} does not resolve (${(e as NodeJS.ErrnoException).code ?? e.message}).`);
  });
  const refused = addresses.find(refusedAddress);
  if (refused !== undefined) {
    throw new DestinationRefusedError(`url's host ${url.hostname}${refused === url.hostname || refused === address ? '' : ` resolves to ${refused}, which`} is not a globally reachable address (loopback, private, link-local, documentation, benchmarking, reserved, multicast or unspecified).`);
  }
}
