// Which network addresses a URL given by a tenant may lead to (webhook URLs, provider base URLs, attachment URLs):
// public unicast addresses, plus what the operator allows in ALLOW_PRIVATE_TARGETS (hosts by name, addresses, CIDR
// ranges, or `*`). Loopback, private, link-local (cloud metadata at 169.254.169.254 included), unique-local,
// carrier-grade NAT, multicast, reserved and unspecified addresses are not public, and neither is an IPv6 address
// that only wraps an IPv4 one (IPv4-compatible, NAT64, 6to4, Teredo): anything ipaddr.js does not call `unicast`.
// An IPv4-mapped IPv6 address is judged as the IPv4 address it maps.

import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** The words every refusal uses, for every kind of address refused. */
export const REFUSED_KINDS = 'a loopback, private, link-local or reserved address';

/** The address (any textual form ipaddr.js reads) is a public unicast address. */
export function isPublicAddress(address: string): boolean {
  const parsed = parseAddress(address);
  if (!parsed) return false;
  // ::/96 (IPv4-compatible, deprecated) wraps an IPv4 address that ipaddr.js would call plain unicast; ipaddr.js
  // reads its dotted spelling (::127.0.0.1) as IPv4-mapped, so that spelling is caught by its text.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0))
    return false;
  if (/^::(\d{1,3}\.){3}\d{1,3}$/.test(address)) return false;
  return parsed.range() === 'unicast';
}

/** One entry of ALLOW_PRIVATE_TARGETS, parsed; null when it is none of a host, an address, a CIDR range or `*`. */
type Entry = { any: true } | { host: string } | { range: [Address, number] };

function parseEntry(raw: string): Entry | null {
  const entry = raw.trim();
  if (entry === '*') return { any: true };
  const unbracketed = entry.replace(/^\[(.*)\]$/, '$1');
  const slash = unbracketed.indexOf('/');
  if (slash > 0) {
    const address = unbracketed.slice(0, slash);
    const bits = unbracketed.slice(slash + 1);
    if (!isIP(address) || !/^\d{1,3}$/.test(bits)) return null;
    const parsed = parseAddress(address)!;
    const length = Number(bits) - (parsed.kind() === 'ipv4' && isIP(address) === 6 ? 96 : 0);
    if (length < 0 || length > (parsed.kind() === 'ipv4' ? 32 : 128)) return null;
    return { range: [parsed, length] };
  }
  // Addresses in their plain spellings only (a decimal or hex "address" is more likely a typo than intended).
  if (isIP(unbracketed)) {
    const parsed = parseAddress(unbracketed)!;
    return { range: [parsed, parsed.kind() === 'ipv4' ? 32 : 128] };
  }
  if (
    /^(?=.{1,253}\.?$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i.test(
      entry,
    )
  )
    return ipaddr.isValid(entry) ? null : { host: normalizeHost(entry) }; // 2130706433, 0x7f000001: an address
  return null;
}

/**
 * The entries of an ALLOW_PRIVATE_TARGETS value (comma-separated), or the problems of those that are not a host,
 * an address, a CIDR range or `*`.
 */
export function parseAllowList(value: string): { entries: string[] } | { problems: string[] } {
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const problems = entries
    .filter((e) => parseEntry(e) === null)
    .map((e) => `"${e}" is not a host name, an IP address, a CIDR range (e.g. 10.0.0.0/8) or *`);
  return problems.length ? { problems } : { entries };
}

/** Where tenant-given URLs may lead: public addresses, and the private ones the operator allows. */
export class TargetPolicy {
  private constructor(
    private readonly any: boolean,
    private readonly hosts: ReadonlySet<string>,
    private readonly ranges: ReadonlyArray<[Address, number]>,
  ) {}

  /** Public addresses only. */
  static readonly publicOnly = new TargetPolicy(false, new Set(), []);
  /** Every address (WEBHOOK_ALLOW_PRIVATE=true for webhooks, `*` in ALLOW_PRIVATE_TARGETS). */
  static readonly anywhere = new TargetPolicy(true, new Set(), []);

  /** The policy of ALLOW_PRIVATE_TARGETS's entries; throws on an entry parseAllowList would reject. */
  static allowing(entries: readonly string[]): TargetPolicy {
    const hosts = new Set<string>();
    const ranges: Array<[Address, number]> = [];
    for (const raw of entries) {
      const entry = parseEntry(raw);
      if (!entry) throw new Error(`"${raw}" is not a host name, an IP address, a CIDR range or *`);
      if ('any' in entry) return TargetPolicy.anywhere;
      if ('host' in entry) hosts.add(entry.host);
      else ranges.push(entry.range);
    }
    return hosts.size || ranges.length ? new TargetPolicy(false, hosts, ranges) : TargetPolicy.publicOnly;
  }

  /** The operator allows every address. */
  get allowsAll(): boolean {
    return this.any;
  }

  /** The operator allows this host by name, whatever it resolves to. */
  allowsHost(host: string): boolean {
    return this.any || this.hosts.has(normalizeHost(host));
  }

  /** A connection to this address is allowed: it is public, or the operator allows it. */
  allowsAddress(address: string): boolean {
    if (this.any || isPublicAddress(address)) return true;
    const parsed = parseAddress(address);
    if (!parsed) return false;
    return this.ranges.some(([base, bits]) => base.kind() === parsed.kind() && parsed.match(base, bits));
  }
}

/** Lowercase, without brackets or the trailing dot of a fully qualified name. */
export function normalizeHost(host: string): string {
  return host
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
}

/**
 * Any textual address ipaddr.js reads (IPv4 in decimal, hex or octal too), an IPv4-mapped IPv6 one as the IPv4 it
 * maps; null when not one.
 */
function parseAddress(address: string): Address | null {
  if (!ipaddr.isValid(address)) return null;
  try {
    return ipaddr.process(address);
  } catch {
    return null;
  }
}
