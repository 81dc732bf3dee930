// The credential the UI speaks with (a tenant API key, a user token or the admin key), kept in this browser's localStorage
// until the user signs out.

const KEY = 'canopy.credential';

export function loadCredential(): string | null {
  try {
    return localStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function saveCredential(credential: string): void {
  localStorage.setItem(KEY, credential);
}

export function clearCredential(): void {
  localStorage.removeItem(KEY);
}

/** A user token (a JWT) rather than a key: it sees only its user's sessions and no tenant-wide view. */
export function isUserToken(credential: string): boolean {
  return credential.split('.').length === 3;
}

/** The admin key: no tenant of its own (no sessions to chat in), every tenant's dashboard. */
export function isAdminKey(credential: string): boolean {
  return !credential.startsWith('ck_') && !isUserToken(credential);
}

/** What kind of credential it is, for the header (API keys start with `ck_`; user tokens are JWTs). */
export function describeCredential(credential: string): string {
  if (credential.startsWith('ck_')) return `API key ${credential.slice(0, 7)}…`;
  const parts = credential.split('.');
  if (parts.length === 3) {
    const subject = tokenSubject(parts[1]!);
    return subject ? `user ${subject}` : 'user token';
  }
  return 'admin key';
}

/** The `sub` of a JWT's payload (base64url JSON), or null if it cannot be read: for display only, not trusted. */
function tokenSubject(payload: string): string | null {
  try {
    const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'));
    const sub = (JSON.parse(json) as { sub?: unknown }).sub;
    return typeof sub === 'string' ? sub : null;
  } catch {
    return null;
  }
}
