// A tenant's settings: the defaults its new sessions take (the context policy of a session created without
// opts.context, the MCP servers of one created without opts.mcpServers) and its consent to its end users' ids on its
// runs' spans. One row per tenant, absent until a default is first set; each default a column, NULL while unset.
// Each change is audited in its transaction (`settings.update`, before and after).

import { Injectable } from '@nestjs/common';
import type { ContextPolicy, Scope, TenantSettingsView } from '@canopy/core';
import { Database, writeAudit } from '@canopy/store';

/** What a change sets: each field given replaces that default (null removes it); absent ones stay. */
export interface TenantSettingsPatch {
  context?: ContextPolicy | null;
  mcpServers?: string[] | null;
  telemetryUserId?: boolean;
}

/** What a new session takes when it names none of its own: each null while the tenant set none. */
export type TenantDefaults = Pick<TenantSettingsView, 'context' | 'mcpServers'>;

interface Row {
  context: ContextPolicy | null;
  mcp_servers: string[] | null;
  telemetry_user_id: boolean | null;
  updated_at: Date;
}

@Injectable()
export class TenantSettingsRepository {
  constructor(private readonly db: Database) {}

  async get(scope: Pick<Scope, 'tenantId'>): Promise<TenantSettingsView> {
    const [row] = await this.db.withTenantSql(scope, (tx) =>
      tx.query<Row>(
        `SELECT context, mcp_servers, telemetry_user_id, updated_at FROM tenant_settings WHERE tenant_id = $1::uuid`,
        [scope.tenantId],
      ),
    );
    return toView(row);
  }

  /**
   * Whether the tenant lets its end users' ids be on its runs' spans (read only where the operator records them and
   * a user's run is traced).
   */
  async userIdAllowed(tenantId: string): Promise<boolean> {
    return (await this.get({ tenantId })).telemetryUserId;
  }

  /** The defaults the tenant's new sessions take when they name none of their own. */
  async defaultsOf(tenantId: string): Promise<TenantDefaults> {
    const { context, mcpServers } = await this.get({ tenantId });
    return { context, mcpServers };
  }

  async update(scope: Pick<Scope, 'tenantId'>, patch: TenantSettingsPatch): Promise<TenantSettingsView> {
    return this.db.withTenantSql(scope, async (tx) => {
      const [before] = await tx.query<Row>(
        `SELECT context, mcp_servers, telemetry_user_id, updated_at FROM tenant_settings WHERE tenant_id = $1::uuid FOR UPDATE`,
        [scope.tenantId],
      );
      const [row] = await tx.query<Row>(
        `INSERT INTO tenant_settings (tenant_id, context, mcp_servers, telemetry_user_id)
         VALUES ($1::uuid, $2::jsonb, $4::jsonb, $6::boolean)
         ON CONFLICT (tenant_id) DO UPDATE
           SET context = CASE WHEN $3::boolean THEN EXCLUDED.context ELSE tenant_settings.context END,
               mcp_servers = CASE WHEN $5::boolean THEN EXCLUDED.mcp_servers ELSE tenant_settings.mcp_servers END,
               telemetry_user_id = CASE WHEN $7::boolean THEN EXCLUDED.telemetry_user_id
                                        ELSE tenant_settings.telemetry_user_id END,
               updated_at = now()
         RETURNING context, mcp_servers, telemetry_user_id, updated_at`,
        [
          scope.tenantId,
          patch.context ? JSON.stringify(patch.context) : null,
          patch.context !== undefined,
          patch.mcpServers ? JSON.stringify(patch.mcpServers) : null,
          patch.mcpServers !== undefined,
          patch.telemetryUserId ?? null,
          patch.telemetryUserId !== undefined,
        ],
      );
      const view = toView(row);
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'settings.update',
        targetType: 'settings',
        targetId: scope.tenantId,
        before: {
          context: before?.context ?? null,
          mcpServers: before?.mcp_servers ?? null,
          telemetryUserId: before?.telemetry_user_id === true,
        },
        after: { context: view.context, mcpServers: view.mcpServers, telemetryUserId: view.telemetryUserId },
      });
      return view;
    });
  }
}

function toView(row: Row | undefined): TenantSettingsView {
  return {
    context: row?.context ?? null,
    mcpServers: row?.mcp_servers ?? null,
    telemetryUserId: row?.telemetry_user_id === true,
    updatedAt: row ? row.updated_at.toISOString() : null,
  };
}
