// A tenant racing its own quotas, on both runtimes (the embedded PGlite and Postgres): a burst of concurrent
// prompts on as many sessions (plain or queued) starts exactly as many runs as a runs quota allows (the tenant's or
// a user's), the others answering 429 quota_exceeded; token quotas admit the runs sent while usage is below the limit and refuse
// the next, the overshoot within its documented bound. (The distributed shape, prompts through two apis, is in
// cluster-saas.e2e-spec.ts.)

/* eslint-disable @typescript-eslint/no-unsafe-call -- JSON bodies read loosely */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@canopy/testing';
import { Api, newTenant, type ApiResponse } from './support/api-client';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';

const RUNTIMES = ['embedded', 'postgres'] as const;

const apps = new Map<(typeof RUNTIMES)[number], TestApp>();
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'canopy-quotas-'));
  apps.set('embedded', await startTestApp({ embeddedDataDir: dataDir }));
  apps.set('postgres', await startTestApp());
}, 120_000);

afterAll(async () => {
  for (const app of apps.values()) await app.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function nextUtcMidnight(): string {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
}

async function sessions(api: Api, count: number, body: Record<string, unknown> = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await api.post('/v1/sessions', { model: 'mock:echo', ...body });
    expect(res.status).toBe(201);
    ids.push(res.body.id as string);
  }
  return ids;
}

/** Sends one prompt to each session at once; answers each response. */
function burst(api: Api, ids: string[], body: Record<string, unknown> = {}): Promise<ApiResponse[]> {
  return Promise.all(
    ids.map((id, i) => api.post(`/v1/sessions/${id}/prompt`, { content: `go ${i}`, ...body })),
  );
}

/** Waits until none of the sessions has a run in flight. */
async function settled(api: Api, ids: string[]): Promise<void> {
  await eventually(
    async () => {
      for (const id of ids) expect((await api.get(`/v1/sessions/${id}`)).body.status).toBe('idle');
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
}

function statuses(responses: ApiResponse[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const res of responses) counts[res.status] = (counts[res.status] ?? 0) + 1;
  return counts;
}

describe.each(RUNTIMES)('%s', (runtime) => {
  let t: TestApp;
  let admin: Api;

  beforeAll(() => {
    t = apps.get(runtime)!;
    admin = new Api(t.url, TEST_ADMIN_KEY);
  });

  it('runs/day = 5: of 20 concurrent prompts on 20 sessions exactly 5 start, 15 answer 429', async () => {
    const tenant = await newTenant(t, `race ${runtime}`);
    const put = await admin.request('PUT', `/v1/admin/tenants/${tenant.tenantId}/quotas`, {
      quotas: [{ metric: 'runs', period: 'day', limit: 5 }],
    });
    expect(put.status).toBe(200);
    const ids = await sessions(tenant.api, 20);

    const answers = await burst(tenant.api, ids);
    expect(statuses(answers)).toEqual({ 202: 5, 429: 15 });
    for (const res of answers.filter((r) => r.status === 429)) {
      expect(res.body.error.code).toBe('quota_exceeded');
      expect(res.body.error.details).toEqual({
        scope: 'tenant',
        metric: 'runs',
        period: 'day',
        limit: 5,
        usage: 5,
        resetsAt: nextUtcMidnight(),
      });
    }
    await settled(tenant.api, ids);
    // The stored runs say the same: 5 runs, and the sessions refused are untouched.
    const usage = await tenant.api.get('/v1/usage');
    expect(usage.body.data).toEqual([expect.objectContaining({ runs: 5 })]);
    const quotas = await tenant.api.get('/v1/quotas');
    expect(quotas.body.tenant).toEqual([expect.objectContaining({ metric: 'runs', limit: 5, usage: 5 })]);
    const trees = await Promise.all(ids.map((id) => tenant.api.get(`/v1/sessions/${id}/tree`)));
    expect(trees.filter((tree) => tree.body.nodes.length > 0)).toHaveLength(5);

    // Spent: the next prompt, a branch and a waited prompt are refused too.
    const started = ids[answers.findIndex((r) => r.status === 202)]!;
    expect(
      (await tenant.api.post(`/v1/sessions/${ids[0]}/prompt`, { content: 'more', wait: true })).status,
    ).toBe(429);
    expect((await tenant.api.post(`/v1/sessions/${started}/branch`, { nodeId: 1 })).status).toBe(429);
  });

  it('runs/day = 5 with queued prompts: 5 start at once, the 15 others answer 429 (none queued to be dropped)', async () => {
    const tenant = await newTenant(t, `queue race ${runtime}`);
    await admin.request('PUT', `/v1/admin/tenants/${tenant.tenantId}/quotas`, {
      quotas: [{ metric: 'runs', period: 'day', limit: 5 }],
    });
    const ids = await sessions(tenant.api, 20);
    const answers = await burst(tenant.api, ids, { ifBusy: 'enqueue' });
    expect(statuses(answers)).toEqual({ 202: 5, 429: 15 });
    for (const res of answers.filter((r) => r.status === 202)) expect(res.body.queued ?? false).toBe(false);
    for (const res of answers.filter((r) => r.status === 429)) {
      expect(res.body.error.details).toMatchObject({ metric: 'runs', limit: 5, usage: 5 });
    }
    await settled(tenant.api, ids);
    const listed = await Promise.all(ids.map((id) => tenant.api.get(`/v1/sessions/${id}`)));
    expect(listed.flatMap((res) => (res.body.queued ?? []) as unknown[])).toEqual([]);
    expect((await tenant.api.get('/v1/usage')).body.data).toEqual([expect.objectContaining({ runs: 5 })]);
  });

  it("a user's runs/month quota: exact for that user's sessions, the tenant's other users unaffected", async () => {
    const tenant = await newTenant(t, `user race ${runtime}`);
    expect(
      (
        await tenant.api.request('PUT', '/v1/quotas/users/bob', {
          quotas: [{ metric: 'runs', period: 'month', limit: 3 }],
        })
      ).status,
    ).toBe(200);
    const bob = await sessions(tenant.api, 10, { userId: 'bob' });
    const alice = await sessions(tenant.api, 5, { userId: 'alice' });
    // Bob's prompts come through his own token and the tenant's key at once.
    const token = (await tenant.api.post('/v1/tokens', { userId: 'bob' })).body.token as string;
    const asBob = tenant.api.as(token);
    const [mine, viaKey, theirs] = await Promise.all([
      burst(asBob, bob.slice(0, 5)),
      burst(tenant.api, bob.slice(5)),
      burst(tenant.api, alice),
    ]);
    const bobs = [...mine, ...viaKey];
    expect(statuses(bobs)).toEqual({ 202: 3, 429: 7 });
    for (const res of bobs.filter((r) => r.status === 429)) {
      expect(res.body.error.details).toMatchObject({
        scope: 'user',
        userId: 'bob',
        metric: 'runs',
        limit: 3,
        usage: 3,
      });
    }
    expect(statuses(theirs)).toEqual({ 202: 5 });
    await settled(tenant.api, [...bob, ...alice]);
    const byUser = (await tenant.api.get('/v1/usage?groupBy=user')).body.data;
    expect(byUser.map((r: { key: string; runs: number }) => [r.key, r.runs])).toEqual([
      ['alice', 5],
      ['bob', 3],
    ]);
  });

  it('a token quota admits the runs sent below it, overshoots within its bound, then refuses', async () => {
    const tenant = await newTenant(t, `tokens ${runtime}`);
    const [first, ...others] = await sessions(tenant.api, 9);
    // One run's usage, measured: mock:echo answers in one model step, "Echo: " and the prompt's words.
    const one = await tenant.api.post(`/v1/sessions/${first}/prompt`, {
      content: 'one two three',
      wait: true,
    });
    expect(one.status).toBe(200);
    const used = (await tenant.api.get('/v1/usage')).body.data[0].totalTokens as number;
    expect(used).toBeGreaterThan(0);
    // Just below the limit: every prompt of the burst is admitted, and none is cut.
    const limit = used + 1;
    await admin.request('PUT', `/v1/admin/tenants/${tenant.tenantId}/quotas`, {
      quotas: [{ metric: 'tokens', period: 'day', limit }],
    });
    const answers = await burst(tenant.api, others, { content: 'one two three' });
    expect(statuses(answers)).toEqual({ 202: others.length });
    await settled(tenant.api, others);
    const after = (await tenant.api.get('/v1/quotas')).body.tenant[0].usage as number;
    // The bound: the runs in flight when usage crossed the limit (all of the burst's) times the most one run can
    // use (here each is one model step using what the first run did).
    expect(after).toBeGreaterThan(limit);
    expect(after).toBeLessThanOrEqual(limit + others.length * used);
    const next = await tenant.api.post(`/v1/sessions/${first}/prompt`, { content: 'more' });
    expect(next.status).toBe(429);
    expect(next.body.error.details).toMatchObject({ metric: 'tokens', limit, usage: after });
  });
});
