// The quotas as the run's own statements keep them, against the real Postgres: canopy_start_run counts each run
// against the runs quotas that apply (the tenant's and the session's user's, per day and per month) under a lock
// on their rows, so concurrent starts over many connections start exactly as many runs as the quotas allow; a
// quota counted in an earlier period is counted again from the rollup; and a run's tokens and cost reach the
// rollup as each turn ends or the run pauses, not only when it ends.

import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@canopy/testing';
import {
  addUsage,
  assistantMessage,
  emptyUsage,
  makeUsage,
  tenantScope,
  userMessage,
  type Scope,
  type Usage,
} from '@canopy/core';
import { Database, periodEnd, PostgresSessionStore, type StartRunResult } from '@canopy/store';
import { QuotasRepository } from './quotas.repository';

let testDb: TestDatabase;
let db: Database;
let store: PostgresSessionStore;
let quotas: QuotasRepository;

beforeAll(async () => {
  testDb = await createTestDatabase();
  // As many connections as the bursts below send at once: each start is its own transaction, racing the others.
  db = new Database({ url: testDb.url, poolMax: 12, txMaxWaitMs: 10_000, txTimeoutMs: 10_000 });
  store = new PostgresSessionStore(db);
  quotas = new QuotasRepository(db);
});

afterAll(async () => {
  await db?.disconnect();
  await testDb?.drop();
});

async function newTenant(): Promise<Scope> {
  const id = randomUUID();
  await db.withTenant({ tenantId: id }, (tx) =>
    tx.tenant.create({ data: { id, name: `q-${id.slice(0, 8)}` } }),
  );
  return tenantScope(id);
}

async function sessions(scope: Scope, count: number, userId?: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const created = await store.create(scope, { model: 'mock:echo', ...(userId ? { userId } : {}) });
    ids.push(created.id);
  }
  return ids;
}

function start(scope: Scope, sessionId: string): Promise<StartRunResult> {
  return store.startRun(scope, { sessionId, kind: 'prompt', input: { content: 'hi' }, status: 'running' });
}

/** Starts a run on every session at once; answers how many started and the refusals' reasons. */
async function burst(scope: Scope, ids: string[]): Promise<{ ok: number; refused: StartRunResult[] }> {
  const results = await Promise.all(ids.map((id) => start(scope, id)));
  return { ok: results.filter((r) => r.ok).length, refused: results.filter((r) => !r.ok) };
}

async function runsStored(scope: Scope): Promise<number> {
  return db.withTenant(scope, (tx) => tx.run.count());
}

function utcDay(offsetDays = 0, from = new Date()): Date {
  return new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate() + offsetDays));
}

function isoDay(day: Date): string {
  return day.toISOString().slice(0, 10);
}

describe('runs quotas in canopy_start_run', () => {
  it('starts exactly the limit of a burst over many connections, and refuses the rest with the quota', async () => {
    const scope = await newTenant();
    await quotas.set(scope.tenantId, null, [{ metric: 'runs', period: 'day', limit: 5 }]);
    const ids = await sessions(scope, 24);

    const { ok, refused } = await burst(scope, ids);
    expect(ok).toBe(5);
    expect(refused).toHaveLength(19);
    for (const r of refused) {
      expect(r).toEqual({
        ok: false,
        reason: 'quota_exceeded',
        quota: {
          metric: 'runs',
          period: 'day',
          limit: 5,
          userId: null,
          usage: 5,
          resetsAt: periodEnd('day').toISOString(),
        },
      });
    }
    expect(await runsStored(scope)).toBe(5);
    // The quota's usage as the tenant reads it agrees.
    expect(await quotas.status(scope.tenantId)).toEqual([expect.objectContaining({ usage: 5 })]);
  });

  it("counts a user's quota and the tenant's together, each exact; the tenant's is named first", async () => {
    const scope = await newTenant();
    await quotas.set(scope.tenantId, null, [{ metric: 'runs', period: 'month', limit: 7 }]);
    await quotas.set(scope.tenantId, 'bob', [
      { metric: 'runs', period: 'day', limit: 3 },
      { metric: 'runs', period: 'month', limit: 4 },
    ]);
    const bob = await sessions(scope, 10, 'bob');
    const alice = await sessions(scope, 4, 'alice');
    const asBob = tenantScope(scope.tenantId, { userId: 'bob' });

    // Bob's through his own scope and Alice's at once, all counted against the tenant's month: Bob gets his
    // day's 3, Alice her 4, and the tenant's month is spent exactly.
    const [b, a] = await Promise.all([burst(asBob, bob), burst(scope, alice)]);
    expect(b.ok).toBe(3);
    // Each refusal names the quota found spent first: Bob's day, or the tenant's month once Alice's runs filled it.
    for (const r of b.refused) {
      const named = r.ok || r.reason !== 'quota_exceeded' ? null : r.quota;
      expect([
        { userId: 'bob', period: 'day', usage: 3 },
        { userId: null, period: 'month', usage: 7 },
      ]).toContainEqual({ userId: named?.userId, period: named?.period, usage: named?.usage });
    }
    expect(a.ok).toBe(4);
    expect(await runsStored(scope)).toBe(7);
    // Both spent now: the tenant's quota, checked first, is the one named, for either user.
    const over = { ok: false, reason: 'quota_exceeded', quota: { userId: null, usage: 7, limit: 7 } };
    // (A new session: which of Bob's ten the burst started is up to the race.)
    expect(await start(scope, (await sessions(scope, 1, 'bob'))[0]!)).toMatchObject(over);
    expect(await start(scope, (await sessions(scope, 1, 'carol'))[0]!)).toMatchObject(over);
  });

  it('does not count a start that claims nothing, nor a session of another tenant', async () => {
    const scope = await newTenant();
    await quotas.set(scope.tenantId, null, [{ metric: 'runs', period: 'day', limit: 2 }]);
    const [id] = await sessions(scope, 1);
    // One session, many starts at once: one claims it, the others find it busy and are not counted.
    const results = await Promise.all(Array.from({ length: 6 }, () => start(scope, id!)));
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(results.filter((r) => !r.ok).map((r) => (r.ok ? null : r.reason))).toEqual(Array(5).fill('busy'));
    const other = await newTenant();
    expect(await start(other, id!)).toMatchObject({ ok: false, reason: 'not_found' });
    expect(await quotas.status(scope.tenantId)).toEqual([expect.objectContaining({ usage: 1 })]);
    const [counted] = await db.withTenant(scope, (tx) => tx.quota.findMany());
    expect(counted).toMatchObject({ counted: 1 });
  });

  it('counts a quota again from the rollup in a new period, where earlier periods do not count', async () => {
    const scope = await newTenant();
    await quotas.set(scope.tenantId, null, [
      { metric: 'runs', period: 'day', limit: 2 },
      { metric: 'runs', period: 'month', limit: 3 },
    ]);
    const ids = await sessions(scope, 4);
    // Runs filed on the last day of the previous month (outside both periods), and both quotas counted then,
    // with a count that no longer holds: the next start counts them again from the rollup.
    const lastMonth = isoDay(new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 0)));
    const today = isoDay(utcDay());
    // Earlier this month (when today is not its first day): a run that counts for the month, not for the day.
    const earlier = utcDay(-1).getUTCMonth() === utcDay().getUTCMonth();
    await db.withTenantSql(scope, async (tx) => {
      await tx.query(
        `INSERT INTO usage_daily (tenant_id, day, session_id, runs) VALUES ($1::uuid, $2::date, 'gone', 50)`,
        [scope.tenantId, lastMonth],
      );
      if (earlier) {
        await tx.query(
          `INSERT INTO usage_daily (tenant_id, day, session_id, runs) VALUES ($1::uuid, $2::date, 'earlier', 1)`,
          [scope.tenantId, isoDay(utcDay(-1))],
        );
      }
      await tx.query(`UPDATE quotas SET counted = 99, counted_from = $2::date WHERE tenant_id = $1::uuid`, [
        scope.tenantId,
        lastMonth,
      ]);
    });

    // Today's 2 (the month has room for them either way); the others refused on the day, checked first.
    const results = await Promise.all(ids.map((id) => start(scope, id)));
    expect(results.filter((r) => r.ok)).toHaveLength(2);
    for (const r of results.filter((r) => !r.ok)) {
      expect(r).toMatchObject({ reason: 'quota_exceeded', quota: { period: 'day', limit: 2, usage: 2 } });
    }
    const counts = () =>
      db.withTenantSql(scope, (tx) =>
        tx.query<{ period: string; counted: number; from: string }>(
          `SELECT period, counted, to_char(counted_from, 'YYYY-MM-DD') AS from FROM quotas ORDER BY period`,
        ),
      );
    const monthStart = `${today.slice(0, 8)}01`;
    expect(await counts()).toEqual([
      { period: 'day', counted: 2, from: today },
      { period: 'month', counted: earlier ? 3 : 2, from: monthStart },
    ]);

    // A quota set now counts what ran before it in its period (the rollup's runs): the month alone.
    await quotas.set(scope.tenantId, null, [{ metric: 'runs', period: 'month', limit: 3 }]);
    const idle = ids.filter((_, i) => !results[i]!.ok);
    if (!earlier) expect(await start(scope, idle[0]!)).toMatchObject({ ok: true });
    expect(await start(scope, idle[1]!)).toMatchObject({
      ok: false,
      reason: 'quota_exceeded',
      quota: { period: 'month', limit: 3, usage: 3 },
    });
    expect(await counts()).toEqual([{ period: 'month', counted: 3, from: monthStart }]);
  });

  it('costs a tenant without a runs quota no write to quotas (its other quotas untouched)', async () => {
    const scope = await newTenant();
    await quotas.set(scope.tenantId, null, [{ metric: 'tokens', period: 'day', limit: 10 }]);
    const [id] = await sessions(scope, 1);
    expect((await start(scope, id!)).ok).toBe(true);
    const [row] = await db.withTenant(scope, (tx) => tx.quota.findMany());
    expect(row).toMatchObject({ metric: 'tokens', counted: 0, countedFrom: null });
  });
});

describe('token and cost usage settled as turns end', () => {
  const turn = (n: number): Usage => makeUsage({ inputTokens: n, outputTokens: n, inputCost: n / 1000 });

  async function rollup(scope: Scope): Promise<{ tokens: number; cost: number }> {
    const [row] = await db.withTenantSql(scope, (tx) =>
      tx.query<{ tokens: number; cost: number }>(
        `SELECT coalesce(sum(total_tokens), 0)::float8 AS tokens, coalesce(sum(total_cost), 0)::float8 AS cost
           FROM usage_daily`,
      ),
    );
    return row!;
  }

  it('adds a turn that took a steered prompt, a pause, and the rest at the end: the sum of the runs', async () => {
    const scope = await newTenant();
    const [id] = await sessions(scope, 1);
    const started = await start(scope, id!);
    if (!started.ok) throw new Error('not started');
    const runId = started.run.id;

    // The first turn ends with a prompt steered onto the run: the run goes on, its first turn settled.
    await store.stageSteer(scope, id!, { content: 'and then?' });
    const first = turn(10);
    const steered = await store.commit(scope, {
      sessionId: id!,
      runId,
      nodes: [
        { id: 1, parentId: null, message: userMessage('hi', 1), usage: null },
        { id: 2, parentId: 1, message: assistantMessage('a', 2), usage: first },
      ],
      position: { path: [1, 2], cursors: { '1': 2 }, head: 2 },
      nextNodeId: 3,
      usage: first,
      finish: { usage: first },
    });
    expect(steered).toMatchObject({ status: 'ok', steer: expect.anything() });
    expect(await rollup(scope)).toEqual({ tokens: 20, cost: 0.01 });

    // The steered turn pauses for a decision with more usage: settled too.
    const second = addUsage(first, turn(5));
    expect(await store.pauseRun(scope, id!, runId, { awaiting: ['t1'] }, second)).toBe('ok');
    expect(await rollup(scope)).toEqual({ tokens: 30, cost: 0.015 });

    // It ends (cancelled here) with all of it: only the rest is added.
    const all = addUsage(second, turn(1));
    expect(await store.endRun(scope, { sessionId: id!, runId, status: 'cancelled', usage: all })).toBe('ok');
    expect(await rollup(scope)).toEqual({ tokens: 32, cost: 0.016 });
    expect((await store.getRun(scope, runId))?.usage.totalTokens).toBe(32);
  });

  it('adds a one-turn run once, at its end (nothing while it runs)', async () => {
    const scope = await newTenant();
    const [id] = await sessions(scope, 1);
    const started = await start(scope, id!);
    if (!started.ok) throw new Error('not started');
    expect(await rollup(scope)).toEqual({ tokens: 0, cost: 0 });
    const u = turn(4);
    await store.commit(scope, {
      sessionId: id!,
      runId: started.run.id,
      nodes: [{ id: 1, parentId: null, message: userMessage('hi', 1), usage: null }],
      position: { path: [1], cursors: {}, head: 1 },
      nextNodeId: 2,
      usage: emptyUsage(),
      finish: { usage: u },
    });
    expect(await rollup(scope)).toEqual({ tokens: 8, cost: 0.004 });
  });
});
