// Who is calling: the admin, a tenant (API key) or one user of a tenant (user token).

import { tenantScope, type Scope } from '@canopy/core';

export type Principal =
  | { kind: 'admin' }
  | { kind: 'tenant'; tenantId: string; keyId: string }
  | { kind: 'user'; tenantId: string; userId: string };

/**
 * What a credential established, for a connection that outlives its first request (a WebSocket, an SSE stream):
 * who it is, the API key standing behind it and until when it holds. Such a connection ends when that key is
 * revoked, the tenant is disabled or the credential expires.
 */
export interface Grant {
  principal: Principal;
  /** The API key itself, or the key that minted a user token; null for the admin key (and a token naming none). */
  keyId: string | null;
  /** When the credential stops being valid (ms since the epoch); Infinity: never. */
  expiresAt: number;
}

/** The scope a tenant or user principal acts in. */
export function scopeOf(principal: Principal): Scope | null {
  switch (principal.kind) {
    case 'tenant':
      return tenantScope(principal.tenantId, { keyId: principal.keyId });
    case 'user':
      return tenantScope(principal.tenantId, { userId: principal.userId });
    default:
      return null;
  }
}

/** The id rate limits count a principal by. */
export function credentialId(principal: Principal): string {
  switch (principal.kind) {
    case 'admin':
      return 'admin';
    case 'tenant':
      return `key:${principal.keyId}`;
    case 'user':
      return `user:${principal.tenantId}:${principal.userId}`;
  }
}
