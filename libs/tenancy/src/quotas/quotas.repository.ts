// Quotas and usage. A quota caps a tenant's (set by the admin) or one of its users' (set by the tenant) tokens,
// cost or runs per UTC day or month. Usage is read from usage_daily, the per-day, per-session rollup the runs'
// triggers keep in Postgres (migration 20261206020100), so every api of a deployment counts the same and a year
// costs one row per session and day; a run counts in the day it started (its tokens and cost as each of its turns
// ends or pauses). `exceeded` is what run admission asks before a new run starts (a run in flight is never cut):
// the tokens and cost quotas are decided there; a runs quota is decided again, exactly, by canopy_start_run, which
// counts each run against the quota's row (its `counted` column) as it records it.

import { Injectable } from '@nestjs/common';
import type { Scope } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import {
  Database,
  isUuid,
  periodEnd,
  periodStart,
  writeAudit,
  type Quota,
  type QuotaMetric,
  type QuotaPeriod,
  type QuotaStatus,
  type SqlTx,
} from '@canopy/store';

export interface UsageRow {
  key: string | null;
  tenantId: string;
  runs: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  totalCost: number;
}

export type UsageGroup = 'day' | 'user' | 'model' | 'session';

interface QuotaRow {
  user_id: string | null;
  metric: QuotaMetric;
  period: QuotaPeriod;
  limit: number;
}

/** Each metric's value over rows `u` of usage_daily. */
const METRIC_SQL: Record<Exclude<QuotaMetric, 'storage'>, string> = {
  tokens: `coalesce(sum(u.total_tokens), 0)`,
  cost: `coalesce(sum(u.total_cost), 0)`,
  runs: `coalesce(sum(u.runs), 0)::float8`,
};

/** How long a tenant found without any quota skips the check (a quota set on another api applies within it). */
const QUOTALESS_CACHE_MS = 10_000;

/** Whether a cache of tenants (see QuotasRepository) holds the tenant, and its entry has not expired. */
function holds(cache: Map<string, number>, tenantId: string): boolean {
  const until = cache.get(tenantId);
  return until !== undefined && until > Date.now();
}

function remember(cache: Map<string, number>, tenantId: string): void {
  if (cache.size >= 10_000) cache.clear();
  cache.set(tenantId, Date.now() + QUOTALESS_CACHE_MS);
}

@Injectable()
export class QuotasRepository {
  /** Tenants found with no quota at all, until when: their runs start without a quota query. */
  private readonly quotaless = new Map<string, number>();
  /** Tenants last found with quotas, until when: their checks run at once, never waiting for another's. */
  private readonly quotaed = new Map<string, number>();
  /**
   * A tenant's check in flight: concurrent checks of a tenant not known either way wait for it, and send their own
   * only if it found quotas (the first prompts of a burst, or every prompt when the cache expired, sent one each).
   */
  private readonly checking = new Map<string, Promise<unknown>>();

  constructor(private readonly db: Database) {}

  /** Replaces the quotas of the tenant (userId null) or of one of its users; not_found for an unknown tenant. */
  async set(tenantId: string, userId: string | null, quotas: Quota[]): Promise<void> {
    if (!isUuid(tenantId)) throw CanopyException.notFound('tenant');
    this.quotaless.delete(tenantId);
    this.quotaed.delete(tenantId);
    await this.db.withTenantSql({ tenantId }, async (tx) => {
      const [tenant] = await tx.query(`SELECT 1 FROM tenants WHERE id = $1::uuid`, [tenantId]);
      if (!tenant) throw CanopyException.notFound('tenant');
      // Locked first in the order canopy_start_run locks a scope's runs quotas (day, then month), so a run
      // starting meanwhile waits for this change or this change for it, never each for the other.
      await tx.query(
        `SELECT 1 FROM quotas WHERE tenant_id = $1::uuid AND user_id IS NOT DISTINCT FROM $2
          ORDER BY period, metric FOR UPDATE`,
        [tenantId, userId],
      );
      const before = await tx.query<QuotaRow>(
        `DELETE FROM quotas WHERE tenant_id = $1::uuid AND user_id IS NOT DISTINCT FROM $2
         RETURNING user_id, metric, period, "limit"`,
        [tenantId, userId],
      );
      for (const q of quotas) {
        await tx.query(
          `INSERT INTO quotas (tenant_id, user_id, metric, period, "limit") VALUES ($1::uuid, $2, $3, $4, $5)`,
          [tenantId, userId, q.metric, q.period, q.limit],
        );
      }
      await writeAudit(tx, {
        tenantId,
        action: 'quota.set',
        targetType: userId === null ? 'tenant' : 'user',
        targetId: userId ?? tenantId,
        before: { quotas: before.map(toQuota) },
        after: { quotas },
      });
    });
  }

  /** Every quota of the tenant (its own and its users'), each with its usage in the current period. */
  async status(tenantId: string, now = new Date()): Promise<QuotaStatus[]> {
    if (!isUuid(tenantId)) throw CanopyException.notFound('tenant');
    return this.db.withTenantSql({ tenantId }, async (tx) => {
      const [tenant] = await tx.query(`SELECT 1 FROM tenants WHERE id = $1::uuid`, [tenantId]);
      if (!tenant) throw CanopyException.notFound('tenant');
      const quotas = await tx.query<QuotaRow>(
        `SELECT user_id, metric, period, "limit" FROM quotas WHERE tenant_id = $1::uuid
          ORDER BY user_id NULLS FIRST, metric, period`,
        [tenantId],
      );
      return Promise.all(quotas.map((q) => this.measure(tx, tenantId, q, now)));
    });
  }

  /**
   * The first quota a new run of this session would exceed (its tenant's, then its user's), or null. The session's
   * user is the one a user quota counts (null: only the tenant's quotas apply). `metrics` narrows the quotas
   * looked at (a steered prompt, which starts no run, asks for tokens and cost only).
   */
  async exceeded(
    scope: Pick<Scope, 'tenantId'>,
    sessionId: string,
    options: { now?: Date; metrics?: readonly QuotaMetric[] } = {},
  ): Promise<QuotaStatus | null> {
    const now = options.now ?? new Date();
    const tenantId = scope.tenantId;
    if (holds(this.quotaless, tenantId)) return null;
    const inFlight = holds(this.quotaed, tenantId) ? undefined : this.checking.get(tenantId);
    if (inFlight) {
      await inFlight.catch(() => undefined);
      if (holds(this.quotaless, tenantId)) return null;
    }
    const check = this.check(scope, sessionId, now, options.metrics);
    if (!this.checking.has(tenantId)) {
      this.checking.set(tenantId, check);
      void check
        .catch(() => undefined)
        .finally(() => {
          if (this.checking.get(tenantId) === check) this.checking.delete(tenantId);
        });
    }
    return check;
  }

  private check(
    scope: Pick<Scope, 'tenantId'>,
    sessionId: string,
    now: Date,
    metrics: readonly QuotaMetric[] | undefined,
  ): Promise<QuotaStatus | null> {
    return this.db.withTenantSql(scope, async (tx) => {
      // Every quota of the tenant, each saying whether it applies to this session (the tenant's, or its user's).
      const rows = await tx.query<QuotaRow & { applies: boolean }>(
        `SELECT q.user_id, q.metric, q.period, q."limit",
                (q.user_id IS NULL
                 OR q.user_id = (SELECT s.user_id FROM sessions s WHERE s.tenant_id = $1::uuid AND s.id = $2))
                  IS TRUE AS applies
           FROM quotas q
          WHERE q.tenant_id = $1::uuid
          ORDER BY q.user_id NULLS FIRST, q.metric, q.period`,
        [scope.tenantId, sessionId],
      );
      const [found, stale] =
        rows.length === 0 ? [this.quotaless, this.quotaed] : [this.quotaed, this.quotaless];
      remember(found, scope.tenantId);
      stale.delete(scope.tenantId);
      // A storage quota limits uploads (FilesService), never runs.
      const quotas = rows.filter(
        (r) => r.applies && r.metric !== 'storage' && (!metrics || metrics.includes(r.metric)),
      );
      for (const q of quotas) {
        const status = await this.measure(tx, scope.tenantId, q, now);
        if (status.usage >= status.limit) return status;
      }
      return null;
    });
  }

  /**
   * Usage over the UTC days from `from` to `to` (both included) grouped by day, user, model (the session's) or
   * session: one tenant's, or (the admin, tenantId null) every tenant's; each row names its tenant.
   */
  async usage(
    tenantId: string | null,
    input: { from: Date; to: Date; groupBy: UsageGroup },
  ): Promise<UsageRow[]> {
    const key: Record<UsageGroup, string> = {
      day: `to_char(u.day, 'YYYY-MM-DD')`,
      user: 'u.user_id',
      model: 'u.model',
      session: 'u.session_id',
    };
    const statement = `
      SELECT ${key[input.groupBy]} AS key, u.tenant_id::text AS tenant_id, sum(u.runs)::int AS runs,
             sum(u.input_tokens) AS input_tokens, sum(u.output_tokens) AS output_tokens,
             sum(u.total_tokens) AS total_tokens, sum(u.total_cost) AS total_cost
        FROM usage_daily u
       WHERE u.day >= ($1::timestamptz AT TIME ZONE 'UTC')::date AND u.day <= ($2::timestamptz AT TIME ZONE 'UTC')::date
             ${tenantId ? 'AND u.tenant_id = $3::uuid' : ''}
       GROUP BY 1, 2
       ORDER BY 2, 1`;
    const params: unknown[] = [input.from, input.to, ...(tenantId ? [tenantId] : [])];
    const rows = await (tenantId
      ? this.db.withTenantSql({ tenantId }, (tx) => tx.query<RawUsage>(statement, params))
      : this.db.withAdminSql('usage of every tenant (admin route)', (tx) =>
          tx.query<RawUsage>(statement, params),
        ));
    return rows.map((r) => ({
      key: r.key,
      tenantId: r.tenant_id,
      runs: r.runs,
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      totalTokens: Number(r.total_tokens),
      totalCost: Number(r.total_cost),
    }));
  }

  /** The bytes and number of the stored files of one tenant, or (the admin, null) of every tenant. */
  async storage(tenantId: string | null): Promise<{ bytes: number; files: number }> {
    const statement = `SELECT coalesce(sum(bytes), 0)::float8 AS bytes, count(*)::int AS files FROM files
                        WHERE status = 'ready' ${tenantId ? 'AND tenant_id = $1::uuid' : ''}`;
    const [row] = await (tenantId
      ? this.db.withTenantSql({ tenantId }, (tx) =>
          tx.query<{ bytes: number; files: number }>(statement, [tenantId]),
        )
      : this.db.withAdminSql('stored files of every tenant (admin route)', (tx) =>
          tx.query<{ bytes: number; files: number }>(statement),
        ));
    return { bytes: Number(row?.bytes ?? 0), files: Number(row?.files ?? 0) };
  }

  private async measure(tx: SqlTx, tenantId: string, q: QuotaRow, now: Date): Promise<QuotaStatus> {
    if (q.metric === 'storage') {
      const [stored] = await tx.query<{ usage: number }>(
        `SELECT coalesce(sum(bytes), 0)::float8 AS usage FROM files
          WHERE tenant_id = $1::uuid ${q.user_id !== null ? 'AND user_id = $2' : ''}`,
        [tenantId, ...(q.user_id !== null ? [q.user_id] : [])],
      );
      return {
        ...toQuota(q),
        userId: q.user_id,
        usage: Number(stored?.usage ?? 0),
        resetsAt: periodEnd(q.period, now).toISOString(),
      };
    }
    const start = periodStart(q.period, now);
    const [row] = await tx.query<{ usage: number }>(
      `SELECT ${METRIC_SQL[q.metric]} AS usage FROM usage_daily u
        WHERE u.tenant_id = $1::uuid AND u.day >= ($2::timestamptz AT TIME ZONE 'UTC')::date
              ${q.user_id !== null ? 'AND u.user_id = $3' : ''}`,
      [tenantId, start, ...(q.user_id !== null ? [q.user_id] : [])],
    );
    return {
      ...toQuota(q),
      userId: q.user_id,
      usage: Number(row?.usage ?? 0),
      resetsAt: periodEnd(q.period, now).toISOString(),
    };
  }
}

interface RawUsage {
  key: string | null;
  tenant_id: string;
  runs: number;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  total_cost: number;
}

function toQuota(r: QuotaRow): Quota {
  return { metric: r.metric, period: r.period, limit: Number(r.limit) };
}
