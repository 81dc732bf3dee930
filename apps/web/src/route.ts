// Hash routes, so the api only ever serves one page: `#/` (playground), `#/sessions/<id>` (one session in the
// playground), `#/sessions/<id>/messages/<n>` (the same, scrolled to message n: where a search hit jumps),
// `#/sessions/<id>/watch` (read-only, as an observer), `#/dashboard`, and the admin's `#/tenants` and
// `#/tenants/<id>` (one tenant opened), and `#/shared/<token>` (a shared conversation, read-only, no sign-in).

import { useEffect, useState } from 'react';

export type Route =
  | { page: 'playground'; sessionId: string | null; observe: boolean; nodeId: number | null }
  | { page: 'dashboard' }
  | { page: 'tenants'; tenantId: string | null }
  | { page: 'shared'; token: string };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '');
  if (path === '/dashboard') return { page: 'dashboard' };
  const shared = /^\/shared\/([^/]+)$/.exec(path);
  if (shared) return { page: 'shared', token: decodeURIComponent(shared[1]!) };
  const tenant = /^\/tenants(?:\/([^/]+))?$/.exec(path);
  if (tenant) return { page: 'tenants', tenantId: tenant[1] ? decodeURIComponent(tenant[1]) : null };
  const match = /^\/sessions\/([^/]+)(?:(\/watch)|\/messages\/(\d+))?$/.exec(path);
  return {
    page: 'playground',
    sessionId: match ? decodeURIComponent(match[1]!) : null,
    observe: match?.[2] !== undefined,
    nodeId: match?.[3] !== undefined ? Number(match[3]) : null,
  };
}

export function sessionHref(id: string, observe = false): string {
  return `#/sessions/${encodeURIComponent(id)}${observe ? '/watch' : ''}`;
}

/** A session opened at one of its messages (a search hit). */
export function messageHref(id: string, nodeId: number): string {
  return `#/sessions/${encodeURIComponent(id)}/messages/${nodeId}`;
}

export function tenantHref(id: string | null): string {
  return id === null ? '#/tenants' : `#/tenants/${encodeURIComponent(id)}`;
}

export function useRoute(): Route {
  const [hash, setHash] = useState(() => location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return parseRoute(hash);
}
