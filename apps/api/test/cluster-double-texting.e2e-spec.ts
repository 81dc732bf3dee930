// Double texting on the distributed deployment (2 apis, 2 workers): prompts queued with ifBusy `enqueue` and
// `interrupt` through both apis at once never make one session run two runs at a time (each run started after the
// one before it finished, by the database's clock), every enqueued prompt runs once (its run has the queued
// prompt's id), and the enqueued ones start in the order they were queued. The queue survives the workers: killed
// while a run is in flight with prompts waiting, a worker started again takes the run over and the queue runs on.

import { Cluster, eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';

let cluster: Cluster;

beforeAll(async () => {
  // Four processes booting at once: a minute and a half on a machine busy with other work.
  // A short run lock: a run whose worker died is taken over within a second or two.
  cluster = await new Cluster({
    apis: 2,
    workers: 2,
    readyTimeoutMs: 90_000,
    env: { RUN_LOCK_DURATION_MS: '1000' },
  }).start();
}, 200_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

interface Run {
  id: string;
  status: string;
  startedAt: string | null;
  finishedAt: string | null;
}

it('runs one run at a time, each enqueued prompt once and in order, with prompts coming through both apis', async () => {
  const { key } = await newTenant({ url: cluster.api(1) } as never, 'cluster double texting');
  const apis = [new Api(cluster.api(1), key), new Api(cluster.api(2), key)];
  const id = (await apis[0]!.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 300 } })).body.id;
  const first = (await apis[0]!.post(`/v1/sessions/${id}/prompt`, { content: 'first' })).body.runId as string;

  const enqueued: string[] = [];
  const interrupts: string[] = [];
  const enqueue = async (i: number) => {
    const res = await apis[i % 2]!.post(`/v1/sessions/${id}/prompt`, { content: `e${i}`, ifBusy: 'enqueue' });
    expect(res.status).toBe(202);
    enqueued.push(res.body.runId);
  };
  for (let i = 0; i < 3; i++) await enqueue(i);
  // Two interrupts at once, one through each api, while the enqueued ones wait.
  const sent = await Promise.all(
    apis.map((api, i) => api.post(`/v1/sessions/${id}/prompt`, { content: `i${i}`, ifBusy: 'interrupt' })),
  );
  for (const res of sent) {
    expect(res.status).toBe(202);
    interrupts.push(res.body.runId);
  }
  for (let i = 3; i < 6; i++) await enqueue(i);

  await eventually(
    async () => {
      const detail = (await apis[1]!.get(`/v1/sessions/${id}`)).body;
      expect({ status: detail.status, queued: detail.queued }).toEqual({ status: 'idle', queued: [] });
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
  const read = async (runId: string): Promise<Run> => {
    const res = await apis[0]!.get(`/v1/runs/${runId}`);
    expect(res.status).toBe(200);
    return res.body as Run;
  };
  const runs = await Promise.all([first, ...interrupts, ...enqueued].map(read));
  // Every run ended; the interrupted ones cancelled, the others completed.
  for (const run of runs) expect(['completed', 'cancelled']).toContain(run.status);

  // Never two at once: sorted by start, each starts after the previous one finished.
  const started = runs
    .filter((r) => r.startedAt !== null)
    .sort((x, y) => x.startedAt!.localeCompare(y.startedAt!));
  for (let i = 1; i < started.length; i++) {
    expect(Date.parse(started[i]!.startedAt!)).toBeGreaterThanOrEqual(
      Date.parse(started[i - 1]!.finishedAt!),
    );
  }
  // Each enqueued prompt ran (its run started), first in, first out.
  const enqueuedRuns = runs.slice(1 + interrupts.length);
  for (const run of enqueuedRuns) expect(run.startedAt).not.toBeNull();
  const order = [...enqueuedRuns].sort((x, y) => x.startedAt!.localeCompare(y.startedAt!)).map((r) => r.id);
  expect(order).toEqual(enqueued);
}, 120_000);

it('keeps the queue through a crash of every worker: the run is taken over and the queued prompts run after it', async () => {
  const { key } = await newTenant({ url: cluster.api(1) } as never, 'cluster queue crash');
  const apis = [new Api(cluster.api(1), key), new Api(cluster.api(2), key)];
  const id = (await apis[0]!.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 2_000 } })).body.id;
  const first = (await apis[0]!.post(`/v1/sessions/${id}/prompt`, { content: 'first' })).body.runId as string;
  const enqueued: string[] = [];
  for (let i = 0; i < 2; i++) {
    const res = await apis[1]!.post(`/v1/sessions/${id}/prompt`, { content: `e${i}`, ifBusy: 'enqueue' });
    expect(res.body).toEqual({ runId: expect.any(String), queued: true });
    enqueued.push(res.body.runId);
  }
  await eventually(
    async () => expect((await apis[0]!.get(`/v1/runs/${first}`)).body.status).toBe('running'),
    {
      timeoutMs: 20_000,
      intervalMs: 100,
    },
  );
  await Promise.all([cluster.kill('worker-1'), cluster.kill('worker-2')]);
  // Nothing executes runs now: the prompts still wait, in order.
  const waiting = (await apis[0]!.get(`/v1/sessions/${id}`)).body as { queued: Array<{ id: string }> };
  expect(waiting.queued.map((q) => q.id)).toEqual(enqueued);
  await cluster.startWorker(1, 90_000);

  await eventually(
    async () => {
      const detail = (await apis[1]!.get(`/v1/sessions/${id}`)).body;
      expect({ status: detail.status, queued: detail.queued }).toEqual({ status: 'idle', queued: [] });
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
  const runs = await Promise.all(
    [first, ...enqueued].map(async (runId) => (await apis[0]!.get(`/v1/runs/${runId}`)).body as Run),
  );
  expect(runs.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
  for (let i = 1; i < runs.length; i++) {
    expect(Date.parse(runs[i]!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(runs[i - 1]!.finishedAt!));
  }
}, 180_000);
