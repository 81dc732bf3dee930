// Finding, forking, moving and expiring on the distributed runtime, with real processes (1 api + 1 worker over the
// machine's Postgres and Redis): search and fork of sessions whose runs the worker executed, a fork while the
// source's run is in flight on the worker, a bulk cancel from the api reaching the worker, NDJSON export / import,
// and the retention sweep as a BullMQ repeatable job run by the worker, announced on the api's activity feed (via
// Redis) and counted in the api's /metrics; a large import through the built api (its import thread, its batches).

import { toCanopyDocument } from '@canopy/core';
import { canopyDocument, Cluster, eventually } from '@canopy/testing';
import { Api, newTenant, SseReader } from './support/api-client';

let cluster: Cluster;
let api: Api;
let admin: Api;
let key: string;
let tenantId: string;

beforeAll(async () => {
  cluster = await new Cluster({ apis: 1, workers: 1, env: { RETENTION_SWEEP_INTERVAL_MS: '500' } }).start();
  ({ api, key, tenantId } = await newTenant({ url: cluster.api(1) } as never, 'distributed conversations'));
  admin = new Api(cluster.api(1), cluster.adminKey);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

it('searches and forks sessions whose runs the worker executed, and forks one while its run is in flight', async () => {
  const created = (await api.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 30 } })).body;
  const answered = await api.post(`/v1/sessions/${created.id}/prompt`, {
    content: 'distributed lantern',
    wait: true,
  });
  expect(answered.body.finalResponse).toBe('Echo: distributed lantern');
  const found = await api.get<{ data: Array<{ session: { id: string } }> }>('/v1/sessions/search?q=lantern');
  expect(found.body.data.map((h) => h.session.id)).toEqual([created.id]);

  await api.post(`/v1/sessions/${created.id}/prompt`, {
    content: 'one two three four five six seven eight nine ten',
  });
  await eventually(async () =>
    expect((await api.get(`/v1/sessions/${created.id}`)).body.status).toBe('busy'),
  );
  const fork = await api.post(`/v1/sessions/${created.id}/fork`, {});
  expect(fork.status).toBe(201);
  expect((await api.get(`/v1/sessions/${fork.body.id}/tree`)).body.path).toEqual([1, 2]);

  const cancelled = await api.post('/v1/sessions/cancel', { filter: { status: ['busy'] } });
  expect(cancelled.body).toMatchObject({ cancelled: 1 });
  await eventually(async () =>
    expect((await api.get(`/v1/sessions/${created.id}`)).body.status).toBe('idle'),
  );

  const exported = (await api.get('/v1/export')).body as string;
  const target = (await newTenant({ url: cluster.api(1) } as never, 'copy')).api;
  const report = await target.request('POST', '/v1/import', exported, {
    'content-type': 'application/x-ndjson',
  });
  expect(
    (report.body as string)
      .split('\n')
      .filter(Boolean)
      .every((l) => JSON.parse(l).ok === true),
  ).toBe(true);
  expect((await target.get('/v1/sessions/search?q=lantern')).body.data).toHaveLength(2);
});

it('imports a large document through the built api: converted on its import thread, written in batches', async () => {
  const doc = canopyDocument(3_000);
  const body = JSON.stringify({ format: 'canopy', data: doc });
  expect(body.length).toBeGreaterThan(64 * 1024);
  const imported = await api.request('POST', '/v1/sessions/import', body, {
    'content-type': 'application/json',
  });
  expect(imported.status).toBe(201);
  const tree = await api.get(`/v1/sessions/${imported.body.id as string}/tree`);
  expect(tree.body.path).toHaveLength(3_000);
});

it('expires old sessions from the worker’s repeatable sweep, announced through Redis and counted by the api', async () => {
  const old = new Date(Date.now() - 5 * 86_400_000).toISOString();
  const doc = toCanopyDocument(
    {
      id: 'old-one',
      title: 'old',
      model: 'mock:echo',
      system: null,
      opts: {},
      tools: [],
      metadata: {},
      userId: null,
      status: 'idle',
      pinned: false,
      createdAt: old,
      updatedAt: old,
    },
    { nodes: [], path: [], cursors: {}, nextId: 1 },
  );
  expect((await api.post('/v1/sessions/import', { format: 'canopy', data: doc })).status).toBe(201);
  const feed = await SseReader.open(`${cluster.api(1)}/v1/activity`, { authorization: `Bearer ${key}` });
  try {
    expect(
      (await admin.patch(`/v1/admin/tenants/${tenantId}`, { retention: { deleteAfterDays: 1 } })).status,
    ).toBe(200);
    await feed.waitFor(
      (e) => e.event === 'closed' && e.data.id === 'old-one' && e.data.reason === 'expired',
      15_000,
    );
    expect((await api.get('/v1/sessions/old-one')).status).toBe(404);
    const metrics = await (await fetch(`${cluster.api(1)}/metrics`)).text();
    expect(metrics).toMatch(/^canopy_sessions_expired_total [1-9]/m);
  } finally {
    feed.close();
  }
});

it('a long conversation on the worker: each run sends and reads what fits the window, and keeps the meter', async () => {
  // 1,000 messages of some 30 words, a 2,000-token window: the worker reads the path's tail, not the whole path.
  const data = Array.from({ length: 1_000 }, (_, i) => ({
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: `message ${i + 1}: ${'lorem '.repeat(30)}`,
  }));
  const imported = await api.post('/v1/sessions/import', { format: 'openai', data, model: 'mock:echo' });
  expect(imported.status).toBe(201);
  const id = imported.body.id as string;
  expect(
    (
      await api.patch(`/v1/sessions/${id}`, {
        opts: { contextWindow: 2_000, context: { strategy: 'truncate' } },
      })
    ).status,
  ).toBe(200);
  for (let turn = 1; turn <= 3; turn++) {
    const res = await api.post(`/v1/sessions/${id}/prompt`, { content: `turn ${turn}`, wait: true });
    expect(res.body).toMatchObject({ status: 'completed', finalResponse: `Echo: turn ${turn}` });
    // mock:echo reports the words it was sent: a window's worth, not the path's 32,000.
    const run = (await api.get(`/v1/runs/${res.body.runId as string}`)).body;
    expect(run.usage.inputTokens).toBeGreaterThan(100);
    expect(run.usage.inputTokens).toBeLessThan(2_000);
  }
  // The worker counted the meter from what it read and kept it with its last commit.
  const view = (await api.get(`/v1/sessions/${id}/context`)).body;
  const session = (await api.get(`/v1/sessions/${id}`)).body;
  expect(session.context).toMatchObject({ window: 2_000, strategy: 'truncate', tokens: view.tokens });
  expect(view.dropped).toBeGreaterThan(900);
});
