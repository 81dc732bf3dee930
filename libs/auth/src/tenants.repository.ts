// Tenants and their API keys. Creating a tenant acts as that (new) tenant, so row-level security needs no
// exception; revoking a key by id and listing the tenants are the admin operations that span tenants.

import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CanopyException } from '@canopy/common';
import { Database, isUuid } from '@canopy/store';
import { generateApiKey } from './api-keys';

export interface TenantRecord {
  id: string;
  name: string;
  createdAt: Date;
}

export interface KeyRecord {
  id: string;
  tenantId: string;
  revoked: boolean;
}

@Injectable()
export class TenantsRepository {
  constructor(private readonly db: Database) {}

  async createTenant(name: string): Promise<{ tenant: TenantRecord; apiKey: string; keyId: string }> {
    const id = randomUUID();
    const key = generateApiKey();
    return this.db.withTenant({ tenantId: id }, async (tx) => {
      const tenant = await tx.tenant.create({ data: { id, name } });
      const created = await tx.apiKey.create({
        data: { tenantId: id, name: 'default', prefix: key.prefix, keyHash: key.hash },
      });
      return {
        tenant: { id: tenant.id, name: tenant.name, createdAt: tenant.createdAt },
        apiKey: key.key,
        keyId: created.id,
      };
    });
  }

  /** A new key for an existing tenant (not_found for an unknown one). */
  async createKey(tenantId: string, name: string | null): Promise<{ id: string; apiKey: string }> {
    const key = generateApiKey();
    return this.db.withTenant({ tenantId }, async (tx) => {
      if (!(await tx.tenant.findUnique({ where: { id: tenantId }, select: { id: true } }))) {
        throw CanopyException.notFound('tenant');
      }
      const created = await tx.apiKey.create({
        data: { tenantId, name, prefix: key.prefix, keyHash: key.hash },
      });
      return { id: created.id, apiKey: key.key };
    });
  }

  /** Every tenant, by name (the admin's dashboard shows tenants by name); at most `limit`. */
  async listTenants(limit: number): Promise<TenantRecord[]> {
    return this.db.withAdmin('list tenants by name (admin route)', async (tx) =>
      tx.tenant.findMany({
        select: { id: true, name: true, createdAt: true },
        orderBy: [{ name: 'asc' }, { id: 'asc' }],
        take: limit,
      }),
    );
  }

  /** Revokes a key (idempotent); false when no such key exists. */
  async revokeKey(keyId: string): Promise<KeyRecord | null> {
    if (!isUuid(keyId)) return null;
    return this.db.withAdmin('revoke an API key by id (admin route)', async (tx) => {
      const key = await tx.apiKey.findUnique({ where: { id: keyId } });
      if (!key) return null;
      if (!key.revokedAt) await tx.apiKey.update({ where: { id: keyId }, data: { revokedAt: new Date() } });
      return { id: key.id, tenantId: key.tenantId, revoked: true };
    });
  }

  /** Whether the tenant's key with this id is revoked (or gone): a user token minted with it is no longer valid. */
  async isKeyRevoked(tenantId: string, keyId: string): Promise<boolean> {
    if (!isUuid(keyId) || !isUuid(tenantId)) return true;
    return this.db.withTenant({ tenantId }, async (tx) => {
      const key = await tx.apiKey.findFirst({ where: { id: keyId }, select: { revokedAt: true } });
      return !key || key.revokedAt !== null;
    });
  }

  /** The key with this hash (authentication: the only row this lookup can see). */
  async findKeyByHash(hash: string): Promise<KeyRecord | null> {
    return this.db.withKeyHash(hash, async (tx) => {
      const key = await tx.apiKey.findUnique({ where: { keyHash: hash } });
      return key ? { id: key.id, tenantId: key.tenantId, revoked: key.revokedAt !== null } : null;
    });
  }
}
