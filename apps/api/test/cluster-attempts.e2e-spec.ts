// A run whose workers keep dying (SIGKILL) is taken over after each stall, re-run from its last commit, and once
// past its attempt budget ended as an error with a rollback: the session idle, the tree as it was, nothing lost.
// A run whose job the queue failed (stalled past its budget) while the worker that failed it died before ending
// the run is ended by the lost-run sweep. Real processes: 1 api + 2 workers, with a short run lock so stalls are
// detected within about a second.

import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { JOBS } from '@canopy/queue';
import { Api, newTenant } from './support/api-client';
import { Cluster, eventually } from '@canopy/testing';

let cluster: Cluster;
let api: Api;

beforeAll(async () => {
  cluster = await new Cluster({ apis: 1, workers: 2, env: { RUN_LOCK_DURATION_MS: '1000' } }).start();
  api = new Api(cluster.api(1), (await newTenant({ url: cluster.api(1) } as never, 'attempts')).key);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

it('ends a regenerate whose workers die on every attempt as an error, rolled back, the session idle', async () => {
  const session = (await api.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 200 } })).body;
  // A reply of 30 words at 200 ms a word: each attempt runs for about 6 s, long enough to be seen running
  // (polled over HTTP) on a loaded machine before it is killed; a two-word reply could finish between polls.
  const words = Array.from({ length: 29 }, (_, i) => `w${i}`).join(' ');
  const first = await api.post(`/v1/sessions/${session.id}/prompt`, { content: words, wait: true });
  expect(first.status).toBe(200);
  const before = (await api.get(`/v1/sessions/${session.id}/tree`)).body;
  expect(before.path).toEqual([1, 2]);

  // Regenerate the reply (a branch from the user node) with a reply long enough to be killed in.
  const { runId } = (await api.post(`/v1/sessions/${session.id}/branch`, { nodeId: 1 })).body;
  // Every time it runs, kill both workers (whichever holds it dies) and start them again: the run stalls and is
  // taken over, until the third stall is past its budget.
  for (let attempt = 1; attempt <= 3; attempt++) {
    await eventually(
      async () => {
        const r = (await api.get(`/v1/runs/${runId}`)).body as { status: string; attempts: number };
        if (r.status !== 'running' || r.attempts !== attempt)
          throw new Error(`attempt ${attempt} not running (run ${r.status}, attempt ${r.attempts})`);
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    await new Promise((r) => setTimeout(r, 150)); // some deltas out, nothing committed
    await Promise.all([cluster.kill('worker-1'), cluster.kill('worker-2')]);
    await Promise.all([cluster.startWorker(1), cluster.startWorker(2)]);
  }
  const run = await eventually(
    async () => {
      const r = (await api.get(`/v1/runs/${runId}`)).body as { status: string; error?: unknown };
      if (r.status !== 'error') throw new Error(`run ${r.status}`);
      return r;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
  expect(run.error).toMatchObject({ code: 'interrupted' });
  const after = (await api.get(`/v1/sessions/${session.id}`)).body;
  expect(after.status).toBe('idle');
  const tree = (await api.get(`/v1/sessions/${session.id}/tree`)).body;
  // Rolled back to where the branch started; the earlier turn untouched, nothing added.
  expect(tree.path).toEqual([1, 2]);
  expect((tree.nodes as Array<{ id: number }>).map((n) => n.id)).toEqual([1, 2]);
  // And the session works on.
  const next = await api.post(`/v1/sessions/${session.id}/prompt`, { content: 'again', wait: true });
  expect(next.body.finalResponse).toBe('Echo: again');
}, 120_000);

it('ends a run whose job the queue failed while nothing lived to end the run', async () => {
  const session = (await api.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 200 } })).body;
  const words = Array.from({ length: 29 }, (_, i) => `w${i}`).join(' ');
  const { runId } = (await api.post(`/v1/sessions/${session.id}/prompt`, { content: words })).body;
  await eventually(async () => expect((await api.get(`/v1/runs/${runId}`)).body.status).toBe('running'), {
    timeoutMs: 20_000,
    intervalMs: 100,
  });
  await Promise.all([cluster.kill('worker-1'), cluster.kill('worker-2')]);
  // What a worker does when a job stalled past its budget, with none of what follows: BullMQ's stalled check
  // fails the job (here on a worker that allows no stall), and the process dies before it ends the run.
  const connection = new Redis(cluster.redisUrl, { maxRetriesPerRequest: null });
  const prefix = `${cluster.prefix}:bull`;
  const queue = new Queue(JOBS.run.queue, { connection, prefix });
  const failer = new Worker(JOBS.run.queue, () => Promise.reject(new Error('not for this worker')), {
    connection,
    prefix,
    lockDuration: 1_000,
    stalledInterval: 300,
    maxStalledCount: 0,
  });
  try {
    await eventually(async () => expect(await queue.getJobState(runId)).toBe('failed'), {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
  } finally {
    await failer.close(true);
    await queue.close();
    await connection.quit();
  }
  await Promise.all([cluster.startWorker(1), cluster.startWorker(2)]);
  // The workers' lost-run sweep finds it (unfinished, no job held) and ends it as the dead worker would have.
  const run = await eventually(
    async () => {
      const r = (await api.get(`/v1/runs/${runId}`)).body as { status: string; error?: unknown };
      if (r.status !== 'error') throw new Error(`run ${r.status}`);
      return r;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
  expect(run.error).toMatchObject({ code: 'interrupted' });
  expect((await api.get(`/v1/sessions/${session.id}`)).body.status).toBe('idle');
  expect((await api.get(`/v1/sessions/${session.id}/tree`)).body.nodes).toEqual([]);
  const next = await api.post(`/v1/sessions/${session.id}/prompt`, { content: 'again', wait: true });
  expect(next.body.finalResponse).toBe('Echo: again');
}, 120_000);
