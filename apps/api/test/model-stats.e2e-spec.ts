// The dashboard's per-model and per-user view over HTTP: runs, errors, latency and time-to-first-token percentiles,
// tokens, cost and the share of thumbs up, kept by the daily rollup as runs go and ratings come, change and go; its
// tokens agree with the usage report; a window without runs is empty; another tenant and a user token see nothing of
// it.

import type { ModelStatsRow } from '@canopy/core';
import { eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';

let t: TestApp;
let a: { tenantId: string; api: Api; key: string };
let b: { tenantId: string; api: Api; key: string };
let echoOfAlice: string;

type Row = ModelStatsRow;

const rowOf = (data: Row[], key: string | null) => data.find((r) => r.key === key);

async function session(userId: string, model: string, opts: Record<string, unknown> = {}): Promise<string> {
  const res = await a.api.post('/v1/sessions', { model, userId, opts });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function prompt(id: string, content: string): Promise<void> {
  expect((await a.api.post(`/v1/sessions/${id}/prompt`, { content, wait: true })).status).toBe(200);
}

beforeAll(async () => {
  t = await startTestApp();
  a = await newTenant(t, 'models A');
  b = await newTenant(t, 'models B');
  echoOfAlice = await session('alice', 'mock:echo', { delayMs: 20 });
  await prompt(echoOfAlice, 'one two three');
  await prompt(echoOfAlice, 'four five');
  await prompt(await session('carol', 'mock:echo'), 'six');
  await prompt(await session('bob', 'mock:script', { script: [{ error: 'model exploded' }] }), 'fail');
  for (const [node, rating, userId] of [
    [2, 'up', 'alice'],
    [4, 'down', 'alice'],
    [2, 'up', 'carol'],
  ] as const) {
    const res = await a.api.request('PUT', `/v1/sessions/${echoOfAlice}/nodes/${node}/feedback`, {
      rating,
      userId,
    });
    expect(res.status).toBe(200);
  }
}, 60_000);

afterAll(async () => {
  await t?.close();
});

describe('GET /v1/stats/models', () => {
  it('per model: runs, errors, latency, tokens, cost and the share of thumbs up', async () => {
    const res = await a.api.get('/v1/stats/models');
    expect(res.status).toBe(200);
    expect(res.body.groupBy).toBe('model');
    expect(res.body.to).toBe(new Date().toISOString().slice(0, 10));
    const echo = rowOf(res.body.data, 'mock:echo')!;
    expect(echo).toMatchObject({ runs: 3, errors: 0, errorRate: 0, thumbsUp: 2, thumbsDown: 1 });
    expect(echo.thumbsUpShare).toBeCloseTo(2 / 3);
    expect(echo.latencyP50Ms).toBeGreaterThan(0);
    expect(echo.latencyP95Ms).toBeGreaterThanOrEqual(echo.latencyP50Ms!);
    // The first token comes before the end.
    expect(echo.timeToFirstTokenP50Ms).toBeGreaterThan(0);
    expect(echo.timeToFirstTokenP50Ms).toBeLessThanOrEqual(echo.latencyP50Ms!);
    expect(echo.timeToFirstTokenP95Ms).toBeGreaterThanOrEqual(echo.timeToFirstTokenP50Ms!);
    expect(echo.totalTokens).toBeGreaterThan(0);
    const script = rowOf(res.body.data, 'mock:script')!;
    // A failed run has no time to first token.
    expect(script.timeToFirstTokenP50Ms).toBeNull();
    expect(script).toMatchObject({
      runs: 1,
      errors: 1,
      errorRate: 1,
      thumbsUp: 0,
      thumbsDown: 0,
      thumbsUpShare: null,
    });
    // The same tokens and cost as the usage report by model.
    const usage = await a.api.get('/v1/usage?groupBy=model');
    for (const group of usage.body.data as Array<{ key: string; totalTokens: number; totalCost: number }>) {
      const row = rowOf(res.body.data, group.key)!;
      expect({ key: group.key, tokens: row.totalTokens, cost: row.totalCost }).toEqual({
        key: group.key,
        tokens: group.totalTokens,
        cost: group.totalCost,
      });
    }
  });

  it('per user, with ratings changed and taken back', async () => {
    // Alice's down becomes an up; carol's up is taken back.
    await a.api.request('PUT', `/v1/sessions/${echoOfAlice}/nodes/4/feedback`, {
      rating: 'up',
      userId: 'alice',
    });
    expect(
      (await a.api.request('DELETE', `/v1/sessions/${echoOfAlice}/nodes/2/feedback?userId=carol`)).status,
    ).toBe(204);
    const res = await a.api.get('/v1/stats/models?groupBy=user');
    expect(rowOf(res.body.data, 'alice')).toMatchObject({
      runs: 2,
      errors: 0,
      thumbsUp: 2,
      thumbsDown: 0,
      thumbsUpShare: 1,
    });
    expect(rowOf(res.body.data, 'bob')).toMatchObject({ runs: 1, errors: 1, errorRate: 1 });
    expect(rowOf(res.body.data, 'carol')).toMatchObject({ runs: 1, thumbsUp: 0, thumbsUpShare: null });
  });

  it('counts a run when it ends, with its latency and time to first token', async () => {
    const slow = await session('dave', 'mock:echo', { delayMs: 300 });
    expect((await a.api.post(`/v1/sessions/${slow}/prompt`, { content: 'slowly now' })).status).toBe(202);
    const dave = async () => rowOf((await a.api.get('/v1/stats/models?groupBy=user')).body.data, 'dave');
    // In flight: not rolled up yet (starting a run touches no shared rollup row).
    expect(await dave()).toBeUndefined();
    await eventually(async () => expect(await dave()).toMatchObject({ runs: 1, errors: 0 }));
    expect((await dave())!.latencyP50Ms).toBeGreaterThanOrEqual(300);
    // Three words, 300 ms each: the first token after about one of them, well before the end.
    const finished = (await dave())!;
    expect(finished.timeToFirstTokenP50Ms).toBeGreaterThanOrEqual(200);
    expect(finished.timeToFirstTokenP50Ms).toBeLessThan(finished.latencyP50Ms!);
  });

  it('answers an empty window, and refuses a window the wrong way round', async () => {
    const later = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const empty = await a.api.get(`/v1/stats/models?from=${later}&to=${later}`);
    expect(empty.body.data).toEqual([]);
    const wrong = await a.api.get(`/v1/stats/models?from=${later}&to=${new Date().toISOString()}`);
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.details.field).toBe('from');
  });

  it('stays inside its tenant: another tenant sees its own, a user token nothing, the admin every tenant', async () => {
    expect((await b.api.get('/v1/stats/models')).body.data).toEqual([]);
    expect((await b.api.get('/v1/stats/models?groupBy=user')).body.data).toEqual([]);
    expect((await b.api.get(`/v1/stats/models?tenantId=${a.tenantId}`)).status).toBe(400);
    const token = (await a.api.post('/v1/tokens', { userId: 'alice' })).body.token;
    expect((await a.api.as(token).get('/v1/stats/models')).status).toBe(403);
    const admin = new Api(t.url, TEST_ADMIN_KEY);
    expect(
      rowOf((await admin.get(`/v1/stats/models?tenantId=${a.tenantId}`)).body.data, 'mock:echo')!.runs,
    ).toBe(4);
    expect((await admin.get(`/v1/stats/models?tenantId=${b.tenantId}`)).body.data).toEqual([]);
  });
});
