// Usage and quotas over a year of runs on the machine's Postgres (a database of its own, row-level security on):
// one tenant with 1,000,000 runs spread over 365 days, 1,000 sessions of 100 users, among two other tenants
// (100,000 runs each). Times the service's own queries (QuotasRepository): GET /v1/usage over a year and over 30
// days by day, user, model and session, and the quota check a prompt makes (a tenant and a user quota) — p50 / p99
// of repeated calls, and the plan of the quota check. Both read usage_daily (the per-day, per-session rollup
// the runs' triggers keep), not the runs. CANOPY_BENCH_USAGE_RUNS picks the size.

import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { tenantScope, type Scope } from '../libs/core/src';
import { Database, QuotasRepository, type UsageGroup } from '../libs/store/src';
import { createTestDatabase, prepareTemplate, type TestDatabase } from '../libs/testing/src';
import { formatTime, printTable } from './report';

const RUNS = Number(process.env.CANOPY_BENCH_USAGE_RUNS ?? 1_000_000);
const SESSIONS = 1_000;
const REPEAT = 10;

interface Row {
  name: string;
  rows: number;
  p50: number;
  p99: number;
}

export interface UsageBenchResult {
  runs: number;
  seedSeconds: number;
  rows: Row[];
  plan: string;
}

export async function runUsageBench(): Promise<UsageBenchResult> {
  await prepareTemplate();
  const testDb = await createTestDatabase();
  const db = new Database({ url: testDb.url, poolMax: 4, txMaxWaitMs: 30_000, txTimeoutMs: 300_000 });
  const quotas = new QuotasRepository(db);
  try {
    const started = performance.now();
    const target = await seedTenant(testDb, RUNS);
    for (let i = 0; i < 2; i++) await seedTenant(testDb, Math.round(RUNS / 10));
    await raw(testDb, (c) => c.query('ANALYZE'));
    const seedSeconds = (performance.now() - started) / 1000;

    await quotas.set(target.tenantId, null, [{ metric: 'tokens', period: 'month', limit: 1e12 }]);
    await quotas.set(target.tenantId, 'user-7', [{ metric: 'runs', period: 'day', limit: 1e9 }]);

    const rows: Row[] = [];
    const now = new Date();
    for (const days of [365, 30]) {
      for (const groupBy of ['day', 'user', 'model', 'session'] as UsageGroup[]) {
        const from = new Date(now.getTime() - days * 86_400_000);
        let count = 0;
        const times = await repeat(async () => {
          count = (await quotas.usage(target.tenantId, { from, to: now, groupBy })).length;
        });
        rows.push({ name: `usage ${days} d by ${groupBy}`, rows: count, ...stats(times) });
      }
    }
    const checkTimes = await repeat(async () => {
      await quotas.exceeded(target, 's7');
    });
    rows.push({ name: 'quota check (tenant month + user day)', rows: 2, ...stats(checkTimes) });

    const plan = await db.withTenantSql(target, async (tx) => {
      const r = await tx.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT coalesce(sum(u.total_tokens), 0) FROM usage_daily u
          WHERE u.tenant_id = $1::uuid AND u.day >= date_trunc('month', now())::date`,
        [target.tenantId],
      );
      return r.map((x) => x['QUERY PLAN']).join('\n');
    });
    return { runs: RUNS, seedSeconds, rows, plan };
  } finally {
    await db.disconnect();
    await testDb.drop();
  }
}

async function repeat(fn: () => Promise<void>): Promise<number[]> {
  await fn(); // warm
  const times: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

function stats(sorted: number[]): { p50: number; p99: number } {
  return {
    p50: sorted[Math.floor(sorted.length / 2)] ?? 0,
    p99: sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? 0,
  };
}

/** A tenant with SESSIONS sessions (100 users) and `runs` finished runs over the past year. */
async function seedTenant(testDb: TestDatabase, runs: number): Promise<Scope> {
  const tenantId = randomUUID();
  await raw(testDb, async (c) => {
    await c.query(`SELECT set_config('canopy.tenant_id', $1, false)`, [tenantId]);
    await c.query(`INSERT INTO tenants (id, name) VALUES ($1::uuid, 'usage bench ' || $1::text)`, [tenantId]);
    await c.query(
      `INSERT INTO sessions (tenant_id, id, user_id, model)
       SELECT $1::uuid, 's' || g, 'user-' || (g % 100), CASE WHEN g % 3 = 0 THEN 'mock:script' ELSE 'mock:echo' END
         FROM generate_series(0, ${SESSIONS - 1}) g`,
      [tenantId],
    );
    const chunk = 100_000;
    for (let from = 0; from < runs; from += chunk) {
      await c.query(
        `INSERT INTO runs (tenant_id, session_id, kind, status, usage, created_at, finished_at)
         SELECT $1::uuid, 's' || (g % ${SESSIONS}), 'prompt', 'completed',
                jsonb_build_object('inputTokens', 10 + g % 50, 'outputTokens', 20 + g % 80,
                                   'totalTokens', 30 + g % 50 + g % 80, 'totalCost', (g % 7) * 0.0001),
                now() - (g::float8 / $3::float8) * interval '365 days',
                now() - (g::float8 / $3::float8) * interval '365 days' + interval '2 seconds'
           FROM generate_series($2::int, $4::int - 1) g`,
        [tenantId, from, runs, Math.min(from + chunk, runs)],
      );
    }
  });
  return tenantScope(tenantId);
}

async function raw<T>(testDb: TestDatabase, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: testDb.url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export function printUsageReport(title: string, r: UsageBenchResult): void {
  printTable(
    `${title}: ${r.runs.toLocaleString('en-US')} runs of one tenant over 365 days (+ 2 × ${(r.runs / 10).toLocaleString('en-US')} of others; seeded in ${r.seedSeconds.toFixed(0)} s)`,
    ['query', 'rows', 'p50', 'p99'],
    r.rows.map((x) => [x.name, String(x.rows), formatTime(x.p50), formatTime(x.p99)]),
    new Set([1, 2, 3]),
  );
  console.log(`\nquota check plan:\n${r.plan}\n`);
}
