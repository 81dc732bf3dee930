// Retention: a tenant's policy (delete sessions not updated for N days; keep pinned ones, or none), which the admin
// sets with the tenant (TenantsRepository.update), and the sweep's batches that apply it (run by RetentionSweeper in
// @canopy/manager). The sweep deletes only idle sessions (never one that is busy or paused, re-checked on the
// locked row) and skips rows another transaction holds, so it never waits on a session in use.

import { Injectable } from '@nestjs/common';
import { Database, empty, query, raw, sql } from '@canopy/store';

export interface RetentionPolicy {
  /** Sessions whose updatedAt is older than this many days are deleted; null: kept forever. */
  deleteAfterDays: number | null;
  /** `pinned`: pinned sessions are kept; `none`: nothing is. */
  keep: 'none' | 'pinned';
}

interface TenantRow {
  id: string;
  retention_delete_after_days: number | null;
  retention_keep: 'none' | 'pinned';
}

@Injectable()
export class RetentionRepository {
  constructor(private readonly db: Database) {}

  /** Every tenant with a policy that deletes something. */
  async tenantsToSweep(): Promise<Array<{ tenantId: string; policy: RetentionPolicy }>> {
    const rows = await this.db.withAdminSql(
      'retention sweep: the tenants whose policy deletes sessions',
      (tx) =>
        tx.query<TenantRow>(
          `SELECT id::text AS id, retention_delete_after_days, retention_keep
             FROM tenants WHERE retention_delete_after_days IS NOT NULL ORDER BY id`,
        ),
    );
    return rows.map((r) => ({
      tenantId: r.id,
      policy: { deleteAfterDays: r.retention_delete_after_days, keep: retentionKeep(r.retention_keep) },
    }));
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

/** The stored `keep` as a policy's (anything but `none` keeps pinned sessions). */
export function retentionKeep(stored: string): RetentionPolicy['keep'] {
  return stored === 'none' ? 'none' : 'pinned';
}
