// Who reads a view that may span tenants (usage, the audit log, run statistics): the admin, or a tenant's key or
// one of its users. The api's Principal is one; the rule of whose rows each may read lives here, once.

import { CanopyException } from '@canopy/common';

export type Caller = { kind: 'admin' } | { kind: 'tenant' | 'user'; tenantId: string };

/**
 * The tenant whose rows a tenant-key-or-admin view reads: the one the admin asks for (null: every tenant), a tenant
 * key's own (naming another is a bad request); a user token is refused.
 */
export function tenantReadBy(caller: Caller, requested: string | undefined): string | null {
  if (caller.kind === 'admin') return requested ?? null;
  if (caller.kind !== 'tenant')
    throw new CanopyException('forbidden', 'this route needs a tenant API key or the admin key');
  if (requested !== undefined && requested !== caller.tenantId)
    throw CanopyException.badRequest('tenantId is for the admin key', { field: 'tenantId' });
  return caller.tenantId;
}
