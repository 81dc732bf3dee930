// Run statistics for dashboards: runs started, finished and failed per minute, and usage per tenant, over a recent
// window. A tenant's figures come through row-level security like every other read; all tenants' only through
// the admin road, named as such.

import { Injectable } from '@nestjs/common';
import type { MinuteStats, RunStats, TenantUsage } from '@canopy/core';
import { Database, type SqlTx } from './database';

export type { MinuteStats, RunStats, TenantUsage };

/** The largest window (one day) and the default one (an hour). */
export const STATS_MAX_MINUTES = 1_440;
export const STATS_DEFAULT_MINUTES = 60;

@Injectable()
export class RunStatsRepository {
  constructor(private readonly db: Database) {}

  /** The figures of one tenant, or of every tenant (null: the admin's view) over the last `minutes`. */
  async stats(tenantId: string | null, minutes: number, now: Date = new Date()): Promise<RunStats> {
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > STATS_MAX_MINUTES) {
      throw new RangeError(`minutes must be an integer from 1 to ${STATS_MAX_MINUTES}`);
    }
    const until = now;
    const since = new Date(Math.floor(now.getTime() / 60_000) * 60_000 - (minutes - 1) * 60_000);
    const read = (tx: SqlTx) => readStats(tx, since);
    const { perMinute, usageByTenant } =
      tenantId === null
        ? await this.db.withAdminSql('dashboard statistics of every tenant', read)
        : await this.db.withTenantSql({ tenantId }, read);
    return { since: since.toISOString(), until: until.toISOString(), perMinute, usageByTenant };
  }
}

async function readStats(tx: SqlTx, since: Date) {
  const minutes = await tx.query<{ minute: Date; started: string; finished: string; failed: string }>(
    `SELECT minute, sum(started) AS started, sum(finished) AS finished, sum(failed) AS failed FROM (
       SELECT date_trunc('minute', created_at) AS minute, 1 AS started, 0 AS finished, 0 AS failed
         FROM runs WHERE created_at >= $1
       UNION ALL
       SELECT date_trunc('minute', finished_at), 0, 1, (status = 'error')::int
         FROM runs WHERE finished_at >= $1
     ) AS events GROUP BY minute ORDER BY minute`,
    [since],
  );
  const usage = await tx.query<{
    tenant_id: string;
    name: string;
    runs: string;
    input_tokens: string;
    output_tokens: string;
    total_tokens: string;
    total_cost: number;
  }>(
    `SELECT r.tenant_id, t.name, count(*) AS runs,
            coalesce(sum((r.usage->>'inputTokens')::bigint), 0) AS input_tokens,
            coalesce(sum((r.usage->>'outputTokens')::bigint), 0) AS output_tokens,
            coalesce(sum((r.usage->>'totalTokens')::bigint), 0) AS total_tokens,
            coalesce(sum((r.usage->>'totalCost')::float8), 0) AS total_cost
       FROM runs r JOIN tenants t ON t.id = r.tenant_id
      WHERE r.finished_at >= $1
      GROUP BY r.tenant_id, t.name
      ORDER BY total_tokens DESC, r.tenant_id
      LIMIT 100`,
    [since],
  );
  return {
    perMinute: minutes.map((m) => ({
      minute: m.minute.toISOString(),
      started: Number(m.started),
      finished: Number(m.finished),
      failed: Number(m.failed),
    })),
    usageByTenant: usage.map((u) => ({
      tenantId: u.tenant_id,
      tenantName: u.name,
      runs: Number(u.runs),
      inputTokens: Number(u.input_tokens),
      outputTokens: Number(u.output_tokens),
      totalTokens: Number(u.total_tokens),
      totalCost: Number(u.total_cost),
    })),
  };
}
