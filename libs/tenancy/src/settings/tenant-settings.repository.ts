// A tenant's settings: the defaults its new sessions take (the context policy of a session created without
// opts.context). One row per tenant, absent until a default is first set; each default a column, NULL while unset.
// Each change is audited in its transaction (`settings.update`, before and after).

import { Injectable } from '@nestjs/common';
import type { ContextPolicy, Scope, TenantSettingsView } from '@canopy/core';
import { Database, writeAudit } from '@canopy/store';

/** What a change sets: each field given replaces that default (null removes it); absent ones stay. */
export interface TenantSettingsPatch {
  context?: ContextPolicy | null;
}

interface Row {
  context: ContextPolicy | null;
  updated_at: Date;
}

@Injectable()
export class TenantSettingsRepository {
  constructor(private readonly db: Database) {}

  async get(scope: Pick<Scope, 'tenantId'>): Promise<TenantSettingsView> {
    const [row] = await this.db.withTenantSql(scope, (tx) =>
      tx.query<Row>(`SELECT context, updated_at FROM tenant_settings WHERE tenant_id = $1::uuid`, [
        scope.tenantId,
      ]),
    );
    return toView(row);
  }

  /** The context policy the tenant's new sessions take when they name none; null when it set none. */
  async contextOf(tenantId: string): Promise<ContextPolicy | null> {
    return (await this.get({ tenantId })).context;
  }

  async update(scope: Pick<Scope, 'tenantId'>, patch: TenantSettingsPatch): Promise<TenantSettingsView> {
    return this.db.withTenantSql(scope, async (tx) => {
      const [before] = await tx.query<Row>(
        `SELECT context, updated_at FROM tenant_settings WHERE tenant_id = $1::uuid FOR UPDATE`,
        [scope.tenantId],
      );
      const setContext = patch.context !== undefined;
      const [row] = await tx.query<Row>(
        `INSERT INTO tenant_settings (tenant_id, context) VALUES ($1::uuid, $2::jsonb)
         ON CONFLICT (tenant_id) DO UPDATE
           SET context = CASE WHEN $3::boolean THEN EXCLUDED.context ELSE tenant_settings.context END,
               updated_at = now()
         RETURNING context, updated_at`,
        [scope.tenantId, patch.context ? JSON.stringify(patch.context) : null, setContext],
      );
      const view = toView(row);
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'settings.update',
        targetType: 'settings',
        targetId: scope.tenantId,
        before: { context: before?.context ?? null },
        after: { context: view.context },
      });
      return view;
    });
  }
}

function toView(row: Row | undefined): TenantSettingsView {
  return { context: row?.context ?? null, updatedAt: row ? row.updated_at.toISOString() : null };
}
