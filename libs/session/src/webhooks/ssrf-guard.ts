// Server-side request forgery guard for webhook URLs: a target must be a public unicast address. Loopback,
// private, link-local (cloud metadata at 169.254.169.254 included), unique-local, carrier-grade NAT, multicast,
// reserved and unspecified addresses are refused — checked on the URL at creation and again on every send, after
// DNS resolution, by the socket's own lookup (so the address connected to is the address checked: no rebinding).
// WEBHOOK_ALLOW_PRIVATE lifts it (local receivers, tests).

import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** The address is one a webhook may reach (a public unicast address; IPv4-mapped IPv6 judged as IPv4). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
}

export class BlockedAddressError extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to ${address}, a loopback, private, link-local or reserved address`);
    this.name = 'BlockedAddressError';
  }
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http.request that resolves like dns.lookup and refuses the connection when any address of the host
 * is not public (unless allowed).
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(
      hostname,
      { all: true, ...(options.family ? { family: options.family } : {}) },
      (err, addresses) => {
        if (err) return callback(err, []);
        const blocked = allowPrivate ? undefined : addresses.find((a) => !isPublicAddress(a.address));
        if (blocked)
          return callback(
            Object.assign(new BlockedAddressError(hostname, blocked.address), { code: 'EBLOCKED' }),
            [],
          );
        if (options.all) return callback(null, addresses);
        const first = addresses[0];
        if (!first)
          return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
        callback(null, first.address, first.family);
      },
    );
  };
}

/**
 * Why a webhook URL is refused at creation (null: accepted): an address literal or a resolved host that is not
 * public. A host that does not resolve (yet) is accepted; every send checks again.
 */
export async function refusalOf(
  url: string,
  allowPrivate: boolean,
  timeoutMs = 3_000,
): Promise<string | null> {
  if (allowPrivate) return null;
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host))
    return isPublicAddress(host) ? null : `${host} is a loopback, private, link-local or reserved address`;
  const addresses = await new Promise<LookupAddress[]>((resolve) => {
    const timer = setTimeout(() => resolve([]), timeoutMs);
    dnsLookup(host, { all: true }, (err, found) => {
      clearTimeout(timer);
      resolve(err ? [] : found);
    });
  });
  const blocked = addresses.find((a) => !isPublicAddress(a.address));
  return blocked
    ? `${host} resolves to ${blocked.address}, a loopback, private, link-local or reserved address`
    : null;
}
