// Double texting on the distributed deployment (2 apis, 2 workers): prompts queued with ifBusy `enqueue` and
// `interrupt` through both apis at once never make one session run two runs at a time (each run started after the
// one before it finished, by the database's clock), every enqueued prompt runs once (its run has the queued
// prompt's id), and the enqueued ones start in the order they were queued. The queue survives the workers: killed
// while a run is in flight with prompts waiting, a worker started again takes the run over and the queue runs on.
// An interrupt sent to another api reaches the worker executing the run, which keeps what it had (its prompt, its
// completed tool round, the text it streamed, marked); a paused run interrupted keeps its prompt and its tool round
// closed. A queued prompt's id answers GET /v1/runs/:id on any api as queued, with its place in the queue.

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
    env: { RUN_LOCK_DURATION_MS: '1000', CANOPY_DEMO_TOOLS: 'true' },
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

/** A message as the tests compare it: its role, its blocks in short, and whether it is marked interrupted. */
function shown(message: { role: string; content: Array<Record<string, unknown>>; interrupted?: true }) {
  const blocks = message.content.map((b) => {
    if (b.type === 'text') return b.text as string;
    if (b.type === 'tool_use') return `tool_use ${b.name as string}`;
    if (b.type === 'tool_result') return `tool_result${b.isError ? ' error' : ''}: ${b.content as string}`;
    return b.type as string;
  });
  return { role: message.role, blocks, ...(message.interrupted ? { interrupted: true } : {}) };
}

async function pathOf(api: Api, id: string) {
  const tree = (await api.get(`/v1/sessions/${id}/tree`)).body as {
    nodes: Array<{ id: number; message: Parameters<typeof shown>[0] }>;
    path: number[];
  };
  const byId = new Map(tree.nodes.map((n) => [n.id, n.message]));
  return tree.path.map((nodeId) => shown(byId.get(nodeId)!));
}

async function idle(api: Api, id: string): Promise<void> {
  await eventually(
    async () => {
      const detail = (await api.get(`/v1/sessions/${id}`)).body;
      expect({ status: detail.status, queued: detail.queued }).toEqual({ status: 'idle', queued: [] });
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

it('an interrupt through another api reaches the worker running the run: it keeps what it had, marked', async () => {
  const { key } = await newTenant({ url: cluster.api(1) } as never, 'cluster interrupt');
  const apis = [new Api(cluster.api(1), key), new Api(cluster.api(2), key)] as const;
  const slow =
    'Let me put that answer into many words so that it takes a good while to stream all of them out';
  const id = (
    await apis[0].post('/v1/sessions', {
      model: 'mock:script',
      opts: {
        serverTools: ['calculator'],
        script: [
          { text: 'Echo: base' },
          { toolCalls: [{ name: 'calculator', input: { expression: '6 * 7' } }] },
          { delayMs: 500, text: slow },
          { text: 'Echo: INTERRUPTER' },
        ],
      },
    })
  ).body.id as string;
  expect((await apis[0].post(`/v1/sessions/${id}/prompt`, { content: 'base', wait: true })).body.status).toBe(
    'completed',
  );
  const interrupted = (await apis[0].post(`/v1/sessions/${id}/prompt`, { content: 'INTERRUPTED' })).body
    .runId as string;
  // Streaming its answer on a worker, as the other api sees it.
  await eventually(
    async () => {
      const partial = (await apis[1].get(`/v1/sessions/${id}`)).body.inFlight?.partial;
      expect(partial?.content?.[0]?.text ?? '').not.toBe('');
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
  const interrupter = await apis[1].post(`/v1/sessions/${id}/prompt`, {
    content: 'INTERRUPTER',
    ifBusy: 'interrupt',
  });
  expect(interrupter.status).toBe(202);
  await idle(apis[0], id);

  expect((await apis[0].get(`/v1/runs/${interrupted}`)).body.status).toBe('cancelled');
  expect((await apis[1].get(`/v1/runs/${interrupter.body.runId}`)).body.status).toBe('completed');
  const path = await pathOf(apis[0], id);
  expect(path).toEqual([
    { role: 'user', blocks: ['base'] },
    { role: 'assistant', blocks: ['Echo: base'] },
    { role: 'user', blocks: ['INTERRUPTED'] },
    { role: 'assistant', blocks: ['tool_use calculator'] },
    { role: 'user', blocks: ['tool_result: {"expression":"6 * 7","value":42}'] },
    { role: 'assistant', blocks: [expect.any(String)], interrupted: true },
    { role: 'user', blocks: ['INTERRUPTER'] },
    { role: 'assistant', blocks: ['Echo: INTERRUPTER'] },
  ]);
  const partial = path[5]!.blocks[0]!;
  expect(partial !== '' && slow.startsWith(partial) && partial !== slow).toBe(true);
  // Written once: the tree holds exactly the path (nothing of the interrupted run committed twice).
  expect((await apis[1].get(`/v1/sessions/${id}/tree`)).body.nodes).toHaveLength(8);
}, 120_000);

it('an interrupted paused run keeps its prompt and its tool round, closed with an error result', async () => {
  const { key } = await newTenant({ url: cluster.api(1) } as never, 'cluster interrupt paused');
  const apis = [new Api(cluster.api(1), key), new Api(cluster.api(2), key)] as const;
  const id = (
    await apis[0].post('/v1/sessions', {
      model: 'mock:script',
      opts: {
        serverTools: ['deploy'],
        script: [
          { text: 'Echo: base' },
          { toolCalls: [{ name: 'deploy', input: { target: 'prod' } }] },
          { text: 'Echo: INTERRUPTER' },
        ],
      },
    })
  ).body.id as string;
  await apis[0].post(`/v1/sessions/${id}/prompt`, { content: 'base', wait: true });
  const paused = await apis[0].post(`/v1/sessions/${id}/prompt`, { content: 'INTERRUPTED', wait: true });
  expect(paused.body.status).toBe('paused');
  const interrupter = await apis[1].post(`/v1/sessions/${id}/prompt`, {
    content: 'INTERRUPTER',
    ifBusy: 'interrupt',
  });
  expect(interrupter.status).toBe(202);
  await idle(apis[1], id);
  expect((await apis[0].get(`/v1/runs/${paused.body.runId}`)).body.status).toBe('cancelled');
  expect(await pathOf(apis[0], id)).toEqual([
    { role: 'user', blocks: ['base'] },
    { role: 'assistant', blocks: ['Echo: base'] },
    { role: 'user', blocks: ['INTERRUPTED'] },
    { role: 'assistant', blocks: ['tool_use deploy'] },
    {
      role: 'user',
      blocks: ['tool_result error: not completed: the run was interrupted by a newer prompt'],
      interrupted: true,
    },
    { role: 'user', blocks: ['INTERRUPTER'] },
    { role: 'assistant', blocks: ['Echo: INTERRUPTER'] },
  ]);
}, 120_000);

it('answers a queued prompt at GET /v1/runs/:id on any api as queued, with its place, until its run starts', async () => {
  const { key } = await newTenant({ url: cluster.api(1) } as never, 'cluster queued run');
  const apis = [new Api(cluster.api(1), key), new Api(cluster.api(2), key)] as const;
  const id = (
    await apis[0].post('/v1/sessions', {
      model: 'mock:script',
      opts: { script: [{ delayMs: 5_000, text: 'slow reply' }, { text: 'one' }, { text: 'two' }] },
    })
  ).body.id as string;
  const first = (await apis[0].post(`/v1/sessions/${id}/prompt`, { content: 'first' })).body.runId as string;
  const queued: string[] = [];
  for (const content of ['e1', 'e2']) {
    const res = await apis[0].post(`/v1/sessions/${id}/prompt`, { content, ifBusy: 'enqueue' });
    queued.push(res.body.runId as string);
  }
  for (const [i, runId] of queued.entries()) {
    const res = await apis[1].get(`/v1/runs/${runId}`);
    expect({ status: res.status, body: res.body }).toMatchObject({
      status: 200,
      body: { id: runId, sessionId: id, status: 'queued', position: i + 1, mode: 'enqueue', startedAt: null },
    });
  }
  expect((await apis[1].post(`/v1/sessions/${id}/cancel`)).status).toBe(200);
  await idle(apis[1], id);
  const runs = await Promise.all(
    [first, ...queued].map(async (runId) => (await apis[1].get(`/v1/runs/${runId}`)).body as Run),
  );
  expect(runs.map((r) => r.status)).toEqual(['cancelled', 'completed', 'completed']);
  for (const run of runs.slice(1)) expect(run).not.toHaveProperty('position');
}, 120_000);
