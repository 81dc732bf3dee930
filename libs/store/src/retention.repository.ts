// Retention: a tenant's policy (delete sessions not updated for N days; keep pinned ones, or none) and the sweep
// that applies it in batches. The sweep deletes only idle sessions (never one that is busy or paused, re-checked
// on the locked row) and skips rows another transaction holds, so it never waits on a session in use.

import { Injectable } from '@nestjs/common';
import { CanopyException } from '@canopy/common';
import { writeAudit } from './audit';
import { Database, isUuid } from './database';
import { empty, query, raw, sql } from './sql';

export interface RetentionPolicy {
  /** Sessions whose updatedAt is older than this many days are deleted; null: kept forever. */
  deleteAfterDays: number | null;
  /** `pinned`: pinned sessions are kept; `none`: nothing is. */
  keep: 'none' | 'pinned';
}

export interface TenantView {
  id: string;
  name: string;
  createdAt: Date;
  disabledAt: Date | null;
  retention: RetentionPolicy;
}

interface TenantRow {
  id: string;
  name: string;
  created_at: Date;
  disabled_at: Date | null;
  retention_delete_after_days: number | null;
  retention_keep: 'none' | 'pinned';
}

@Injectable()
export class RetentionRepository {
  constructor(private readonly db: Database) {}

  /** A tenant with its policy (the admin's view); null for an unknown tenant. */
  async tenant(tenantId: string): Promise<TenantView | null> {
    if (!isUuid(tenantId)) return null;
    const [row] = await this.db.withTenantSql({ tenantId }, (tx) =>
      query<TenantRow>(tx, sql`SELECT ${TENANT_COLUMNS} FROM tenants WHERE tenants.id = ${tenantId}::uuid`),
    );
    return row ? toView(row) : null;
  }

  /** Sets the tenant's policy; not_found for an unknown tenant. */
  async setPolicy(tenantId: string, policy: RetentionPolicy): Promise<TenantView> {
    if (!isUuid(tenantId)) throw CanopyException.notFound('tenant');
    const [row] = await this.db.withTenantSql({ tenantId }, async (tx) => {
      const [before] = await query<TenantRow>(
        tx,
        sql`SELECT ${TENANT_COLUMNS} FROM tenants WHERE tenants.id = ${tenantId}::uuid FOR UPDATE`,
      );
      if (!before) return [];
      const updated = await query<TenantRow>(
        tx,
        sql`
        UPDATE tenants
           SET retention_delete_after_days = ${policy.deleteAfterDays}::int, retention_keep = ${policy.keep}::text,
               updated_at = now()
         WHERE tenants.id = ${tenantId}::uuid
        RETURNING ${TENANT_COLUMNS}`,
      );
      await writeAudit(tx, {
        tenantId,
        action: 'tenant.retention',
        targetType: 'tenant',
        targetId: tenantId,
        before: { ...toView(before).retention },
        after: { ...policy },
      });
      return updated;
    });
    if (!row) throw CanopyException.notFound('tenant');
    return toView(row);
  }

  /** Every tenant with a policy that deletes something. */
  async tenantsToSweep(): Promise<Array<{ tenantId: string; policy: RetentionPolicy }>> {
    const rows = await this.db.withAdminSql(
      'retention sweep: the tenants whose policy deletes sessions',
      (tx) =>
        tx.query<TenantRow>(
          `SELECT ${TENANT_COLUMN_LIST} FROM tenants WHERE retention_delete_after_days IS NOT NULL ORDER BY id`,
        ),
    );
    return rows.map((r) => ({ tenantId: r.id, policy: toView(r).retention }));
  }

  /**
   * Deletes up to `batch` of the tenant's idle sessions not updated for the policy's days (pinned ones kept when
   * the policy says so), oldest first; answers their ids.
   */
  async expireBatch(
    tenantId: string,
    policy: RetentionPolicy,
    batch: number,
    now = new Date(),
  ): Promise<string[]> {
    if (policy.deleteAfterDays === null) return [];
    const cutoff = new Date(now.getTime() - policy.deleteAfterDays * 86_400_000);
    const pinned = policy.keep === 'pinned' ? raw('AND NOT sessions.pinned') : empty;
    const candidatePinned = policy.keep === 'pinned' ? raw('AND NOT candidate.pinned') : empty;
    const rows = await this.db.withTenantSql({ tenantId }, (tx) =>
      query<{ id: string }>(
        tx,
        sql`
        WITH picked AS MATERIALIZED (
          -- Materialized: the batch is chosen once (a subquery a plan rescans could pick other rows each time).
          SELECT candidate.id FROM sessions AS candidate
           WHERE candidate.tenant_id = ${tenantId}::uuid
             AND candidate.updated_at < ${cutoff}::timestamptz
             AND candidate.status = 'idle' ${candidatePinned}
           ORDER BY candidate.updated_at
           LIMIT ${batch}::int
             FOR UPDATE SKIP LOCKED
        )
        DELETE FROM sessions
         USING picked
         WHERE sessions.tenant_id = ${tenantId}::uuid AND sessions.id = picked.id
           -- Checked again on the locked row: one that became busy or was touched meanwhile stays.
           AND sessions.status = 'idle' AND sessions.updated_at < ${cutoff}::timestamptz ${pinned}
        RETURNING sessions.id`,
      ),
    );
    return rows.map((r) => r.id);
  }
}

const TENANT_COLUMN_LIST =
  'tenants.id::text AS id, tenants.name, tenants.created_at, tenants.disabled_at, tenants.retention_delete_after_days, ' +
  'tenants.retention_keep';
const TENANT_COLUMNS = raw(TENANT_COLUMN_LIST);

function toView(row: TenantRow): TenantView {
  return {
    id: row.id,
    name: row.name,
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
    retention: {
      deleteAfterDays: row.retention_delete_after_days,
      keep: row.retention_keep === 'none' ? 'none' : 'pinned',
    },
  };
}
