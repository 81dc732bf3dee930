// The credential the UI speaks with (a tenant API key or a user token), kept in this browser's localStorage
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

/** What kind of credential it is, for the header (API keys start with `ck_`; user tokens are JWTs). */
export function describeCredential(credential: string): string {
  if (credential.startsWith('ck_')) return `API key ${credential.slice(0, 7)}…`;
  if (credential.split('.').length === 3) return 'user token';
  return 'admin key';
}
