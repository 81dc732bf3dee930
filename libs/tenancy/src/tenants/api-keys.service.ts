// A tenant's API keys, for the admin (any tenant's) and for a tenant (its own): list, create (the key is shown
// once), revoke. A revocation is told to every process once committed: the key, and the user tokens it minted,
// stop working and their open connections close.

import { Inject, Injectable } from '@nestjs/common';
import { CanopyException } from '@canopy/common';
import { CREDENTIAL_CHANGES, type CredentialChanges } from './credential-changes.port';
import { TenantsRepository, type CreatedKey, type KeyView } from './tenants.repository';

@Injectable()
export class ApiKeysService {
  constructor(
    private readonly tenants: TenantsRepository,
    @Inject(CREDENTIAL_CHANGES) private readonly credentials: CredentialChanges,
  ) {}

  list(tenantId: string): Promise<KeyView[]> {
    return this.tenants.listKeys(tenantId);
  }

  create(tenantId: string, input: { name: string | null; expiresAt: Date | null }): Promise<CreatedKey> {
    return this.tenants.createKey(tenantId, input);
  }

  /** Revokes a key: one of `tenantId`'s when given (a tenant revoking its own), any tenant's otherwise. */
  async revoke(keyId: string, tenantId?: string): Promise<void> {
    const key = await this.tenants.revokeKey(keyId, tenantId);
    if (!key) throw CanopyException.notFound('key');
    await this.credentials.keyRevoked(key.tenantId, key.id);
  }
}
