// Leases of heavy operations (imports, bulk exports and deletes, forks): at most a few per tenant in flight across
// the deployment (table heavy_operations). A lease is taken under a transaction-level advisory
// lock of its tenant (two takers of one tenant count one after the other), renewed while its operation works, and
// given back at its end; a lease its process stopped renewing lapses at its expiry.

import { Injectable } from '@nestjs/common';
import type { Scope } from '@canopy/core';
import { Database } from './database';
import { query, sql } from './sql';

/** The advisory lock class of a tenant's heavy-operation leases (second key: a hash of the tenant id). */
const HEAVY_LEASE_LOCK = 0x68766f70;

@Injectable()
export class HeavyOperationsRepository {
  constructor(private readonly db: Database) {}

  /** Takes lease `id` if the tenant holds fewer than `limit` live ones; answers whether it did. */
  async acquire(scope: Scope, id: string, kind: string, limit: number, ttlMs: number): Promise<boolean> {
    return this.db.withTenantSql(scope, async (tx) => {
      await query(
        tx,
        sql`SELECT pg_advisory_xact_lock(${HEAVY_LEASE_LOCK}::int, hashtext(${scope.tenantId}::text))`,
      );
      const taken = await query(
        tx,
        sql`
        WITH lapsed AS (
            DELETE FROM heavy_operations WHERE tenant_id = ${scope.tenantId}::uuid AND expires_at < now()
        )
        INSERT INTO heavy_operations (tenant_id, id, kind, expires_at)
        SELECT ${scope.tenantId}::uuid, ${id}::text, ${kind}::text, now() + make_interval(secs => ${ttlMs / 1000}::float8)
         WHERE (SELECT count(*) FROM heavy_operations
                 WHERE tenant_id = ${scope.tenantId}::uuid AND expires_at >= now()) < ${limit}::int
        RETURNING 1`,
      );
      return taken.length === 1;
    });
  }

  /** Pushes lease `id`'s expiry on; false when it is gone (lapsed and taken back). */
  async renew(scope: Scope, id: string, ttlMs: number): Promise<boolean> {
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query(
        tx,
        sql`UPDATE heavy_operations SET expires_at = now() + make_interval(secs => ${ttlMs / 1000}::float8)
             WHERE tenant_id = ${scope.tenantId}::uuid AND id = ${id}::text RETURNING 1`,
      ),
    );
    return rows.length === 1;
  }

  async release(scope: Scope, id: string): Promise<void> {
    await this.db.withTenantSql(scope, (tx) =>
      query(
        tx,
        sql`DELETE FROM heavy_operations WHERE tenant_id = ${scope.tenantId}::uuid AND id = ${id}::text`,
      ),
    );
  }
}
