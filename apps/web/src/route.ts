// Hash routes, so the api only ever serves one page: `#/` (playground), `#/sessions/<id>` (one session in the
// playground) and `#/dashboard`.

import { useEffect, useState } from 'react';

export type Route = { page: 'playground'; sessionId: string | null } | { page: 'dashboard' };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '');
  if (path === '/dashboard') return { page: 'dashboard' };
  const match = /^\/sessions\/([^/]+)$/.exec(path);
  return { page: 'playground', sessionId: match ? decodeURIComponent(match[1]!) : null };
}

export function sessionHref(id: string): string {
  return `#/sessions/${encodeURIComponent(id)}`;
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
