// Quotas and usage over HTTP: the admin sets a tenant's quotas, the tenant its users'; a prompt over one answers
// 429 quota_exceeded with the limit, the usage and when it resets, while a run already admitted is never cut; a
// run's turns count as each ends, and a prompt steered onto a run over a token quota is refused too; GET
// /v1/quotas shows each with its usage; GET /v1/usage groups the stored runs' usage by day, user, model and
// session (the admin's view spans tenants); every quota change is audited. (Concurrent prompts racing a quota:
// hostile-tenant-quotas.e2e-spec.ts.)

/* eslint-disable @typescript-eslint/no-unsafe-call -- JSON bodies read loosely */

import { eventually } from '@canopy/testing';
import { Api, newTenant, type ApiResponse } from './support/api-client';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';

let t: TestApp;
let admin: Api;

beforeAll(async () => {
  t = await startTestApp();
  admin = new Api(t.url, TEST_ADMIN_KEY);
});

afterAll(async () => {
  await t?.close();
});

function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

function nextUtcMidnight(): string {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
}

describe('a tenant quota (set by the admin)', () => {
  it('refuses the prompt over it with 429 quota_exceeded, after letting the admitted run finish', async () => {
    const tenant = await newTenant(t, 'quota tokens');
    const set = await admin.request('PUT', `/v1/admin/tenants/${tenant.tenantId}/quotas`, {
      quotas: [{ metric: 'tokens', period: 'day', limit: 1 }],
    });
    expect(set.status).toBe(200);
    expect(set.body.tenant).toEqual([
      { metric: 'tokens', period: 'day', limit: 1, usage: 0, resetsAt: nextUtcMidnight() },
    ]);
    const id = (await tenant.api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    // Under the quota: admitted, and it runs to its end although it uses more than the limit.
    const first = await tenant.api.post(`/v1/sessions/${id}/prompt`, {
      content: 'one two three',
      wait: true,
    });
    expect(first.status).toBe(200);
    expect(first.body.status).toBe('completed');
    const over = await tenant.api.post(`/v1/sessions/${id}/prompt`, { content: 'again', wait: true });
    expectError(over, 429, 'quota_exceeded');
    expect(over.body.error.details).toEqual({
      scope: 'tenant',
      metric: 'tokens',
      period: 'day',
      limit: 1,
      usage: expect.any(Number),
      resetsAt: nextUtcMidnight(),
    });
    expect(over.body.error.details.usage).toBeGreaterThan(1);
    expect(over.body.error.message).toContain('resets at');
    // A branch is a new run too.
    expectError(await tenant.api.post(`/v1/sessions/${id}/branch`, { nodeId: 1 }), 429, 'quota_exceeded');
    // Nothing was started: the session is idle, its tree unchanged.
    expect((await tenant.api.get(`/v1/sessions/${id}`)).body.status).toBe('idle');
    expect((await tenant.api.get(`/v1/sessions/${id}/tree`)).body.nodes).toHaveLength(2);

    // Lifting the quota lets prompts through again.
    await admin.request('PUT', `/v1/admin/tenants/${tenant.tenantId}/quotas`, { quotas: [] });
    expect(
      (await tenant.api.post(`/v1/sessions/${id}/prompt`, { content: 'again', wait: true })).status,
    ).toBe(200);
    const audit = (await admin.get(`/v1/audit?tenantId=${tenant.tenantId}&action=quota.`)).body.data;
    expect(audit.map((e: { action: string; actor: unknown }) => [e.action, e.actor])).toEqual([
      ['quota.set', { type: 'admin' }],
      ['quota.set', { type: 'admin' }],
    ]);
    expect(audit[0].before.quotas).toEqual([{ metric: 'tokens', period: 'day', limit: 1 }]);
  });
});

describe('a run that takes steered prompts', () => {
  it('settles each turn as it ends, and a steered prompt over a token quota answers 429', async () => {
    const tenant = await newTenant(t, 'quota steer');
    await admin.request('PUT', `/v1/admin/tenants/${tenant.tenantId}/quotas`, {
      quotas: [{ metric: 'tokens', period: 'day', limit: 1 }],
    });
    // The first turn streams for a moment (a prompt is steered onto it meanwhile); the steered turn waits long.
    const id = (
      await tenant.api.post('/v1/sessions', {
        model: 'mock:script',
        opts: {
          script: [
            { delayMs: 200, text: 'one two three' },
            { delayMs: 60_000, text: 'late' },
          ],
        },
      })
    ).body.id;
    expect((await tenant.api.post(`/v1/sessions/${id}/prompt`, { content: 'go' })).status).toBe(202);
    const steered = await tenant.api.post(`/v1/sessions/${id}/prompt`, {
      content: 'and then',
      ifBusy: 'steer',
    });
    expect(steered.body.staged).toBe(true);

    // The first turn's usage counts once it ends, while the run goes on with the steered prompt.
    await eventually(
      async () => expect((await tenant.api.get('/v1/quotas')).body.tenant[0].usage).toBeGreaterThan(1),
      { timeoutMs: 20_000 },
    );
    expect((await tenant.api.get(`/v1/sessions/${id}`)).body.status).toBe('busy');
    // Over the quota now: another steered prompt is refused, the run in flight is not cut.
    const over = await tenant.api.post(`/v1/sessions/${id}/prompt`, { content: 'more', ifBusy: 'steer' });
    expectError(over, 429, 'quota_exceeded');
    expect(over.body.error.details).toMatchObject({ metric: 'tokens', limit: 1 });
    expect((await tenant.api.get(`/v1/sessions/${id}`)).body.status).toBe('busy');
    expect((await tenant.api.post(`/v1/sessions/${id}/cancel`)).status).toBeLessThan(300);
  });

  it('stages a steered prompt when only a runs quota is spent (it starts no run)', async () => {
    const tenant = await newTenant(t, 'quota steer runs');
    await admin.request('PUT', `/v1/admin/tenants/${tenant.tenantId}/quotas`, {
      quotas: [{ metric: 'runs', period: 'day', limit: 1 }],
    });
    const id = (
      await tenant.api.post('/v1/sessions', {
        model: 'mock:script',
        opts: { script: [{ delayMs: 200, text: 'one two three' }, { text: 'done' }] },
      })
    ).body.id;
    const run = (await tenant.api.post(`/v1/sessions/${id}/prompt`, { content: 'go' })).body.runId;
    const steered = await tenant.api.post(`/v1/sessions/${id}/prompt`, {
      content: 'and then',
      ifBusy: 'steer',
    });
    expect(steered.body).toEqual({ runId: run, staged: true });
    await eventually(
      async () => expect((await tenant.api.get(`/v1/sessions/${id}`)).body.status).toBe('idle'),
      { timeoutMs: 20_000 },
    );
    expect((await tenant.api.get('/v1/usage')).body.data).toEqual([expect.objectContaining({ runs: 1 })]);
    expectError(
      await tenant.api.post(`/v1/sessions/${id}/prompt`, { content: 'again' }),
      429,
      'quota_exceeded',
    );
  });
});

describe('a user quota (set by the tenant)', () => {
  it('counts the runs of that user’s sessions only', async () => {
    const tenant = await newTenant(t, 'quota users');
    const put = await tenant.api.request('PUT', '/v1/quotas/users/bob', {
      quotas: [{ metric: 'runs', period: 'month', limit: 1 }],
    });
    expect(put.status).toBe(200);
    const bob = (await tenant.api.post('/v1/sessions', { model: 'mock:echo', userId: 'bob' })).body.id;
    const alice = (await tenant.api.post('/v1/sessions', { model: 'mock:echo', userId: 'alice' })).body.id;
    expect((await tenant.api.post(`/v1/sessions/${bob}/prompt`, { content: 'hi', wait: true })).status).toBe(
      200,
    );
    const over = await tenant.api.post(`/v1/sessions/${bob}/prompt`, { content: 'hi', wait: true });
    expectError(over, 429, 'quota_exceeded');
    expect(over.body.error.details).toMatchObject({
      scope: 'user',
      userId: 'bob',
      metric: 'runs',
      limit: 1,
      usage: 1,
    });
    // Bob's own token meets the same answer; alice is not limited.
    const token = (await tenant.api.post('/v1/tokens', { userId: 'bob' })).body.token;
    expectError(
      await tenant.api.as(token).post(`/v1/sessions/${bob}/prompt`, { content: 'hi' }),
      429,
      'quota_exceeded',
    );
    for (let i = 0; i < 2; i++)
      expect(
        (await tenant.api.post(`/v1/sessions/${alice}/prompt`, { content: 'hi', wait: true })).status,
      ).toBe(200);

    const listed = await tenant.api.get('/v1/quotas');
    expect(listed.body).toEqual({
      tenant: [],
      users: [
        {
          userId: 'bob',
          quotas: [expect.objectContaining({ metric: 'runs', period: 'month', limit: 1, usage: 1 })],
        },
      ],
    });
    // One quota per metric and period.
    expectError(
      await tenant.api.request('PUT', '/v1/quotas/users/bob', {
        quotas: [
          { metric: 'runs', period: 'day', limit: 1 },
          { metric: 'runs', period: 'day', limit: 2 },
        ],
      }),
      400,
      'bad_request',
    );
  });
});

describe('GET /v1/usage', () => {
  it('groups the stored usage by day, user, model and session; the admin sees every tenant', async () => {
    const tenant = await newTenant(t, 'usage');
    const s1 = (await tenant.api.post('/v1/sessions', { model: 'mock:echo', userId: 'u1' })).body.id;
    const s2 = (await tenant.api.post('/v1/sessions', { model: 'mock:echo', userId: 'u2' })).body.id;
    await tenant.api.post(`/v1/sessions/${s1}/prompt`, { content: 'a b', wait: true });
    await tenant.api.post(`/v1/sessions/${s1}/prompt`, { content: 'c d', wait: true });
    await tenant.api.post(`/v1/sessions/${s2}/prompt`, { content: 'e f', wait: true });

    const byDay = await tenant.api.get('/v1/usage');
    expect(byDay.status).toBe(200);
    expect(byDay.body.groupBy).toBe('day');
    expect(byDay.body.data).toEqual([
      expect.objectContaining({ key: new Date().toISOString().slice(0, 10), runs: 3 }),
    ]);
    expect(byDay.body.data[0].totalTokens).toBeGreaterThan(0);
    const byUser = (await tenant.api.get('/v1/usage?groupBy=user')).body.data;
    expect(byUser.map((r: { key: string; runs: number }) => [r.key, r.runs])).toEqual([
      ['u1', 2],
      ['u2', 1],
    ]);
    const bySession = (await tenant.api.get('/v1/usage?groupBy=session')).body.data;
    expect(bySession.map((r: { key: string }) => r.key).sort()).toEqual([s1, s2].sort());
    expect((await tenant.api.get('/v1/usage?groupBy=model')).body.data).toEqual([
      expect.objectContaining({ key: 'mock:echo', runs: 3 }),
    ]);
    // A window before anything happened is empty; from after to is refused.
    const past = '2020-01-01T00:00:00Z';
    expect((await tenant.api.get(`/v1/usage?from=${past}&to=2020-01-02T00:00:00Z`)).body.data).toEqual([]);
    expectError(await tenant.api.get(`/v1/usage?from=2020-01-02T00:00:00Z&to=${past}`), 400, 'bad_request');

    const all = (await admin.get('/v1/usage?groupBy=user')).body.data;
    expect(all.filter((r: { tenantId: string }) => r.tenantId === tenant.tenantId)).toHaveLength(2);
    // Filtered to one tenant, or asked by the tenant itself: every row still names its tenant.
    const one = (await admin.get(`/v1/usage?tenantId=${tenant.tenantId}`)).body.data;
    expect(one).toEqual([expect.objectContaining({ runs: 3, tenantId: tenant.tenantId })]);
    expect((await tenant.api.get('/v1/usage')).body.data).toEqual([
      expect.objectContaining({ runs: 3, tenantId: tenant.tenantId }),
    ]);
    const other = await newTenant(t, 'usage other');
    expect((await other.api.get('/v1/usage')).body.data).toEqual([]);
    expectError(await other.api.get(`/v1/usage?tenantId=${tenant.tenantId}`), 400, 'bad_request');
  });
});
