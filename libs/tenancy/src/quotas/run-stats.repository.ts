// Run statistics for dashboards: runs started, finished and failed per minute with their tokens and latency, usage
// per tenant, and the latest runs with their sessions' titles, over a recent window. A tenant's figures come
// through row-level security like every other read; all tenants' only through the admin road, named as such.

import { Injectable } from '@nestjs/common';
import type { MinuteStats, RecentRun, RunStats, TenantUsage } from '@canopy/core';
import { Database, type SqlTx } from '@canopy/store';

export type { MinuteStats, RecentRun, RunStats, TenantUsage };

/** What the store knows; the live sessions over time come from the api's sampler. */
export type StoredRunStats = Omit<RunStats, 'liveSessions'>;

const RECENT_RUNS = 50;

/** The largest window (one day) and the default one (an hour). */
export const STATS_MAX_MINUTES = 1_440;
export const STATS_DEFAULT_MINUTES = 60;

@Injectable()
export class RunStatsRepository {
  constructor(private readonly db: Database) {}

  /** The figures of one tenant, or of every tenant (null: the admin's view) over the last `minutes`. */
  async stats(tenantId: string | null, minutes: number, now: Date = new Date()): Promise<StoredRunStats> {
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > STATS_MAX_MINUTES) {
      throw new RangeError(`minutes must be an integer from 1 to ${STATS_MAX_MINUTES}`);
    }
    const until = now;
    const since = new Date(Math.floor(now.getTime() / 60_000) * 60_000 - (minutes - 1) * 60_000);
    const read = (tx: SqlTx) => readStats(tx, since);
    const { perMinute, usageByTenant, recentRuns } =
      tenantId === null
        ? await this.db.withAdminSql('dashboard statistics of every tenant', read)
        : await this.db.withTenantSql({ tenantId }, read);
    return { since: since.toISOString(), until: until.toISOString(), perMinute, usageByTenant, recentRuns };
  }
}

async function readStats(tx: SqlTx, since: Date) {
  const minutes = await tx.query<{
    minute: Date;
    started: string;
    finished: string;
    failed: string;
    input_tokens: string;
    output_tokens: string;
    total_tokens: string;
    p50: number | null;
    p95: number | null;
  }>(
    `SELECT minute, sum(started) AS started, sum(finished) AS finished, sum(failed) AS failed,
            coalesce(sum(input_tokens), 0) AS input_tokens, coalesce(sum(output_tokens), 0) AS output_tokens,
            coalesce(sum(total_tokens), 0) AS total_tokens,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS p50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS p95
       FROM (
         SELECT date_trunc('minute', created_at) AS minute, 1 AS started, 0 AS finished, 0 AS failed,
                NULL::bigint AS input_tokens, NULL::bigint AS output_tokens, NULL::bigint AS total_tokens,
                NULL::float8 AS latency_ms
           FROM runs WHERE created_at >= $1
         UNION ALL
         SELECT date_trunc('minute', finished_at), 0, 1, (status = 'error')::int,
                (usage->>'inputTokens')::bigint, (usage->>'outputTokens')::bigint, (usage->>'totalTokens')::bigint,
                extract(epoch FROM finished_at - created_at) * 1000
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
  const recent = await tx.query<{
    id: string;
    session_id: string;
    title: string | null;
    tenant_id: string;
    name: string;
    kind: string;
    status: string;
    created_at: Date;
    finished_at: Date | null;
    total_tokens: string | null;
    error: { code?: unknown; message?: unknown } | null;
  }>(
    `SELECT r.id, r.session_id, s.title, r.tenant_id, t.name, r.kind, r.status, r.created_at, r.finished_at,
            r.usage->>'totalTokens' AS total_tokens, r.error
       FROM runs r
       JOIN sessions s ON s.tenant_id = r.tenant_id AND s.id = r.session_id
       JOIN tenants t ON t.id = r.tenant_id
      WHERE r.created_at >= $1 OR r.finished_at >= $1
      ORDER BY coalesce(r.finished_at, r.created_at) DESC, r.id
      LIMIT ${RECENT_RUNS}`,
    [since],
  );
  return {
    perMinute: minutes.map((m): MinuteStats => ({
      minute: m.minute.toISOString(),
      started: Number(m.started),
      finished: Number(m.finished),
      failed: Number(m.failed),
      inputTokens: Number(m.input_tokens),
      outputTokens: Number(m.output_tokens),
      totalTokens: Number(m.total_tokens),
      latencyP50Ms: m.p50 === null ? null : Math.round(Number(m.p50)),
      latencyP95Ms: m.p95 === null ? null : Math.round(Number(m.p95)),
    })),
    usageByTenant: usage.map((u): TenantUsage => ({
      tenantId: u.tenant_id,
      tenantName: u.name,
      runs: Number(u.runs),
      inputTokens: Number(u.input_tokens),
      outputTokens: Number(u.output_tokens),
      totalTokens: Number(u.total_tokens),
      totalCost: Number(u.total_cost),
    })),
    recentRuns: recent.map((r): RecentRun => ({
      runId: r.id,
      sessionId: r.session_id,
      sessionTitle: r.title,
      tenantId: r.tenant_id,
      tenantName: r.name,
      kind: r.kind,
      status: r.status,
      createdAt: r.created_at.toISOString(),
      finishedAt: r.finished_at?.toISOString() ?? null,
      totalTokens: Number(r.total_tokens ?? 0),
      error:
        r.error && typeof r.error.code === 'string'
          ? { code: r.error.code, message: typeof r.error.message === 'string' ? r.error.message : '' }
          : null,
    })),
  };
}
