// Who is calling: the admin, a tenant (API key) or one user of a tenant (user token).

import { tenantScope, type Scope } from '@canopy/core';

export type Principal =
  | { kind: 'admin' }
  | { kind: 'tenant'; tenantId: string; keyId: string }
  | { kind: 'user'; tenantId: string; userId: string };

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
