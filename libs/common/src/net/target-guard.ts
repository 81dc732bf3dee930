// The SSRF guard on every URL a tenant gives, by one TargetPolicy: checked when the URL is saved (a 400 naming the
// field), and again on every connection, after DNS resolution, against every address the host resolves to — by
// the socket's own lookup, so the address connected to is the address checked (no DNS rebinding). Node does not
// call `lookup` for an address literal, so literals are checked before connecting. Refusals say that the target
// was refused, never whether anything answered there.

import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { CanopyException } from '../errors/canopy.exception';
import { normalizeHost, REFUSED_KINDS, type TargetPolicy } from './target-policy';

/**
 * A connection the guard refused; `reason` names the host, never what answers there, and `label` what the URL was
 * (the message: "<label> refused: <reason>").
 */
export class TargetRefusedError extends Error {
  readonly code = 'ETARGETREFUSED';

  constructor(
    readonly reason: string,
    label = 'target',
  ) {
    super(`${label} refused: ${reason}`);
    this.name = 'TargetRefusedError';
  }
}

/** The TargetRefusedError somewhere in an error's cause chain (fetch wraps it in "fetch failed"). */
export function targetRefusalIn(error: unknown): TargetRefusedError | null {
  let e: unknown = error;
  for (let depth = 0; depth < 6 && typeof e === 'object' && e !== null; depth++) {
    if (e instanceof TargetRefusedError) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return null;
}

/** Why connecting to a host that is an address literal is refused (null: allowed, or not a literal). */
export function literalRefusal(host: string, policy: TargetPolicy): string | null {
  const address = normalizeHost(host);
  if (!isIP(address)) return null;
  return policy.allowsAddress(address) ? null : `${address} is ${REFUSED_KINDS}`;
}

function resolvedRefusal(
  host: string,
  addresses: readonly LookupAddress[],
  policy: TargetPolicy,
): string | null {
  if (policy.allowsHost(host)) return null;
  return addresses.some((a) => !policy.allowsAddress(a.address))
    ? `${host} resolves to ${REFUSED_KINDS}`
    : null;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for sockets (http.request, net.connect, undici's connector) that resolves like dns.lookup and refuses
 * the connection when any address of the host is refused by the policy.
 */
export function guardedLookup(policy: TargetPolicy) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(
      hostname,
      { all: true, ...(options.family ? { family: options.family } : {}) },
      (err, addresses) => {
        if (err) return callback(err, []);
        const refusal = resolvedRefusal(hostname, addresses, policy);
        if (refusal) return callback(new TargetRefusedError(refusal), []);
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
 * Why a URL is refused when it is saved (null: accepted): an address literal, or a host resolving to an address,
 * that the policy refuses. A host that does not resolve (yet) is accepted: every connection checks again.
 */
export async function urlRefusal(
  url: string,
  policy: TargetPolicy,
  timeoutMs = 3_000,
): Promise<string | null> {
  if (policy.allowsAll) return null;
  let host: string;
  try {
    host = normalizeHost(new URL(url).hostname);
  } catch {
    return null; // not a URL: the request's schema answers that
  }
  if (host === '') return null;
  if (isIP(host)) return literalRefusal(host, policy);
  if (policy.allowsHost(host)) return null;
  const addresses = await new Promise<LookupAddress[]>((resolve) => {
    const timer = setTimeout(() => resolve([]), timeoutMs);
    dnsLookup(host, { all: true }, (err, found) => {
      clearTimeout(timer);
      resolve(err ? [] : found);
    });
  });
  return resolvedRefusal(host, addresses, policy);
}

/**
 * Throws 400 bad_request naming `field` when the URL is refused (`label` is how the message names the URL, e.g.
 * "webhook URL").
 */
export async function assertTargetAllowed(
  url: string,
  policy: TargetPolicy,
  field: string,
  label: string,
): Promise<void> {
  const refusal = await urlRefusal(url, policy);
  if (refusal) {
    throw CanopyException.badRequest(
      `${label} refused: ${refusal} (only the operator can allow private targets, with ALLOW_PRIVATE_TARGETS)`,
      { field },
    );
  }
}

/**
 * A fetch whose every connection passes the guard (literal hosts before connecting, names after resolution), for
 * calls to URLs a tenant gave. Redirects are not followed: a 3xx comes back as the response. A refusal rejects
 * with a TargetRefusedError saying "<label> refused: ...".
 */
export function guardedFetch(policy: TargetPolicy, label: string): typeof globalThis.fetch {
  const connect = buildConnector({ lookup: guardedLookup(policy) });
  const dispatcher = new Agent({
    connect: (options, callback) => {
      const refusal = literalRefusal(options.hostname, policy);
      if (refusal) return callback(new TargetRefusedError(refusal), null);
      connect(options, callback);
    },
  });
  const guarded = async (input: unknown, init?: Record<string, unknown>) => {
    try {
      return await undiciFetch(input as Parameters<typeof undiciFetch>[0], {
        ...(init as Parameters<typeof undiciFetch>[1]),
        dispatcher,
        redirect: 'manual',
      });
    } catch (error) {
      const refused = targetRefusalIn(error);
      throw refused ? new TargetRefusedError(refused.reason, label) : error;
    }
  };
  return guarded as unknown as typeof globalThis.fetch;
}
