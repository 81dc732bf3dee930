// A tenant's own provider keys (bring your own key): sealed by the SecretBox before they reach the database,
// opened only to call the provider. Reads for the API answer what is configured (provider, base URL, models,
// the key's last four characters), never the key. Each change is audited in its transaction (without the key).

import { Injectable } from '@nestjs/common';
import type { Scope } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import { Database, writeAudit, type SecretBox } from '@canopy/store';

export interface ProviderKeyView {
  provider: string;
  baseUrl: string | null;
  models: string[];
  keyHint: string;
  createdAt: string;
  updatedAt: string;
}

export interface ProviderCredentials {
  apiKey: string;
  baseUrl: string | null;
}

interface Row {
  provider: string;
  encrypted_key: string;
  base_url: string | null;
  models: string[];
  key_hint: string;
  created_at: Date;
  updated_at: Date;
}

@Injectable()
export class ProviderKeysRepository {
  /** box: null when the deployment has no encryption key (provider keys then cannot be stored). */
  constructor(
    private readonly db: Database,
    private readonly box: SecretBox | null,
  ) {}

  get available(): boolean {
    return this.box !== null;
  }

  async put(
    scope: Pick<Scope, 'tenantId'>,
    provider: string,
    input: { apiKey: string; baseUrl: string | null; models: string[] },
  ): Promise<ProviderKeyView> {
    const box = this.requireBox();
    const sealed = box.seal(input.apiKey, context(scope.tenantId, provider));
    const hint = input.apiKey.slice(-4);
    return this.db.withTenantSql(scope, async (tx) => {
      const [before] = await tx.query<Row>(
        `SELECT * FROM provider_keys WHERE tenant_id = $1::uuid AND provider = $2 FOR UPDATE`,
        [scope.tenantId, provider],
      );
      const [row] = await tx.query<Row>(
        `INSERT INTO provider_keys (tenant_id, provider, encrypted_key, base_url, models, key_hint)
         VALUES ($1::uuid, $2, $3, $4, $5::text[], $6)
         ON CONFLICT (tenant_id, provider) DO UPDATE
           SET encrypted_key = EXCLUDED.encrypted_key, base_url = EXCLUDED.base_url, models = EXCLUDED.models,
               key_hint = EXCLUDED.key_hint, updated_at = now()
         RETURNING *`,
        [scope.tenantId, provider, sealed, input.baseUrl, input.models, hint],
      );
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: before ? 'provider_key.update' : 'provider_key.create',
        targetType: 'provider_key',
        targetId: provider,
        ...(before
          ? { before: { baseUrl: before.base_url, models: before.models, keyHint: before.key_hint } }
          : {}),
        after: { baseUrl: input.baseUrl, models: input.models, keyHint: hint },
      });
      return toView(row!);
    });
  }

  async list(scope: Pick<Scope, 'tenantId'>): Promise<ProviderKeyView[]> {
    const rows = await this.db.withTenantSql(scope, (tx) =>
      tx.query<Row>(`SELECT * FROM provider_keys WHERE tenant_id = $1::uuid ORDER BY provider`, [
        scope.tenantId,
      ]),
    );
    return rows.map(toView);
  }

  async get(scope: Pick<Scope, 'tenantId'>, provider: string): Promise<ProviderKeyView> {
    const [row] = await this.db.withTenantSql(scope, (tx) =>
      tx.query<Row>(`SELECT * FROM provider_keys WHERE tenant_id = $1::uuid AND provider = $2`, [
        scope.tenantId,
        provider,
      ]),
    );
    if (!row) throw CanopyException.notFound('provider key');
    return toView(row);
  }

  async delete(scope: Pick<Scope, 'tenantId'>, provider: string): Promise<void> {
    await this.db.withTenantSql(scope, async (tx) => {
      const [row] = await tx.query<Row>(
        `DELETE FROM provider_keys WHERE tenant_id = $1::uuid AND provider = $2 RETURNING *`,
        [scope.tenantId, provider],
      );
      if (!row) throw CanopyException.notFound('provider key');
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'provider_key.delete',
        targetType: 'provider_key',
        targetId: provider,
        before: { baseUrl: row.base_url, models: row.models, keyHint: row.key_hint },
      });
    });
  }

  /** The providers the tenant has a usable key for. */
  async providersOf(tenantId: string): Promise<ReadonlySet<string>> {
    if (!this.box) return new Set();
    const rows = await this.db.withTenantSql({ tenantId }, (tx) =>
      tx.query<{ provider: string }>(`SELECT provider FROM provider_keys WHERE tenant_id = $1::uuid`, [
        tenantId,
      ]),
    );
    return new Set(rows.map((r) => r.provider));
  }

  /** The tenant's key for a provider, opened (to call the provider); null when it has none or it cannot be opened. */
  async credentials(tenantId: string, provider: string): Promise<ProviderCredentials | null> {
    if (!this.box) return null;
    const [row] = await this.db.withTenantSql({ tenantId }, (tx) =>
      tx.query<Row>(`SELECT * FROM provider_keys WHERE tenant_id = $1::uuid AND provider = $2`, [
        tenantId,
        provider,
      ]),
    );
    if (!row) return null;
    try {
      return { apiKey: this.box.open(row.encrypted_key, context(tenantId, provider)), baseUrl: row.base_url };
    } catch {
      return null; // sealed under another deployment key: as if absent
    }
  }

  private requireBox(): SecretBox {
    if (!this.box) {
      throw CanopyException.unavailable(
        'provider keys need an encryption key: set CANOPY_ENCRYPTION_KEY (32 bytes, hex or base64) on every process',
      );
    }
    return this.box;
  }
}

function context(tenantId: string, provider: string): string {
  return `provider_keys:${tenantId}:${provider}`;
}

function toView(r: Row): ProviderKeyView {
  return {
    provider: r.provider,
    baseUrl: r.base_url,
    models: r.models,
    keyHint: r.key_hint,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}
