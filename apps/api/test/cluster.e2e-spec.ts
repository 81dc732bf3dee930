// The distributed runtime with real processes: 2 api + 2 workers over the machine's Postgres and Redis. A client
// on one api sees every event of a run prompted through the other, in order; a cancel through either reaches the
// worker running it; /v1/live on either lists the session; a worker killed mid-run loses nothing committed.

import { Api, newTenant } from './support/api-client';
import { WsClient, wsUrl } from './support/ws-client';
import { Cluster, eventually } from '@canopy/testing';

let cluster: Cluster;
let api1: Api;
let api2: Api;
let key: string;

beforeAll(async () => {
  cluster = await new Cluster({ apis: 2, workers: 2 }).start();
  const tenant = await newTenant({ url: cluster.api(1) } as never, 'cluster');
  key = tenant.key;
  api1 = new Api(cluster.api(1), key);
  api2 = new Api(cluster.api(2), key);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

describe('two apis and two workers', () => {
  it('delivers every event of a run prompted through api #1 to a subscriber on api #2, in order', async () => {
    const session = (await api1.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 20 } })).body;
    const ws = await WsClient.connect(wsUrl(cluster.api(2), key));
    await ws.request('subscribe', { sessionId: session.id });
    const prompt = await api1.post(`/v1/sessions/${session.id}/prompt`, {
      content: 'alpha beta gamma delta',
      wait: true,
    });
    expect(prompt.status).toBe(200);
    expect(prompt.body.finalResponse).toBe('Echo: alpha beta gamma delta');
    // The run's commit, then the title its first prompt gives the untitled session (a state store), then the token
    // meter the worker counted from what the run read.
    await eventually(() =>
      expect(ws.events(session.id).some((e) => e.event === 'context' && e.data.kind === 'meter')).toBe(true),
    );
    const events = ws.events(session.id);
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    const milestones = events.map((e) => e.event).filter((t) => !/_(start|delta|end)$/.test(t));
    expect(milestones).toEqual([
      'snapshot',
      'status',
      'message',
      'message',
      'step',
      'status',
      'turn',
      'tree',
      'store',
      'title',
      'store',
      'context',
    ]);
    const text = events
      .filter((e) => e.event === 'text_delta')
      .map((e) => (e.data as { delta: string }).delta)
      .join('');
    expect(text).toBe('Echo: alpha beta gamma delta');
    await ws.close();
  });

  it('lists the session in /v1/live on either api while it is watched', async () => {
    const session = (await api1.post('/v1/sessions', { model: 'mock:echo' })).body;
    const ws = await WsClient.connect(wsUrl(cluster.api(2), key));
    await ws.request('subscribe', { sessionId: session.id });
    for (const api of [api1, api2]) {
      await eventually(async () => {
        const entry = (await api.get(`/v1/live/${session.id}`)).body;
        expect(entry).toMatchObject({ id: session.id, controllers: 1 });
        expect(entry.where.api).toContain('api-2');
      });
    }
    await ws.close();
  });

  it('names the worker running a run in /v1/live, and forgets it when the run ends', async () => {
    const session = (await api1.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 60 } })).body;
    const { body } = await api1.post(`/v1/sessions/${session.id}/prompt`, { content: 'a b c d e f g h' });
    await eventually(async () => {
      const entry = (await api2.get(`/v1/live/${session.id}`)).body;
      expect(entry.where.worker).toMatch(/^worker-\d$/);
      expect(entry.where.api).not.toContain(entry.where.worker);
    });
    await eventually(async () =>
      expect((await api1.get(`/v1/runs/${body.runId}`)).body.status).toBe('completed'),
    );
    await eventually(async () => {
      const res = await api2.get(`/v1/live/${session.id}`);
      expect(res.status === 404 || res.body.where.worker === null).toBe(true);
    });
  });

  it('stops a run on a worker when the cancel comes through the other api', async () => {
    const session = (await api1.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 100 } })).body;
    const { body } = await api1.post(`/v1/sessions/${session.id}/prompt`, { content: 'w '.repeat(50) });
    await eventually(async () =>
      expect((await api1.get(`/v1/runs/${body.runId}`)).body.status).toBe('running'),
    );
    const started = Date.now();
    const cancel = await api2.post(`/v1/sessions/${session.id}/cancel`);
    expect(cancel).toMatchObject({ status: 200, body: { runId: body.runId } });
    expect(Date.now() - started).toBeLessThan(2_000); // acknowledged by the worker, not the timeout path
    await eventually(async () =>
      expect((await api2.get(`/v1/runs/${body.runId}`)).body.status).toBe('cancelled'),
    );
    expect((await api2.get(`/v1/sessions/${session.id}`)).body.status).toBe('idle');
    expect((await api2.get(`/v1/sessions/${session.id}/tree`)).body.nodes).toHaveLength(0);
  });
});

describe('a worker killed mid-run', () => {
  it('leaves every session idle, every tree valid, no node duplicated or lost, every run finished', async () => {
    const sessions: string[] = [];
    for (let i = 0; i < 4; i++) {
      sessions.push((await api1.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 60 } })).body.id);
    }
    const completedPrompts = new Map<string, number>(sessions.map((s) => [s, 0]));
    for (let round = 0; round < 3; round++) {
      const runs = await Promise.all(
        sessions.map(async (id) => ({
          id,
          runId: (await api1.post(`/v1/sessions/${id}/prompt`, { content: `round ${round} a b c d e f` }))
            .body.runId as string,
        })),
      );
      // Kill a worker while runs are in flight, at a different moment each round, and bring it back.
      await new Promise((r) => setTimeout(r, 100 + round * 120));
      const victim = `worker-${(round % 2) + 1}`;
      await cluster.kill(victim);
      await cluster.startWorker(Number(victim.slice(-1)));
      for (const { id, runId } of runs) {
        await eventually(
          async () => {
            const status = (await api1.get(`/v1/runs/${runId}`)).body.status;
            expect(['completed', 'error', 'cancelled']).toContain(status);
            if (status === 'completed') completedPrompts.set(id, completedPrompts.get(id)! + 1);
          },
          { timeoutMs: 30_000, intervalMs: 200 },
        );
      }
    }
    for (const id of sessions) {
      const session = (await api1.get(`/v1/sessions/${id}`)).body;
      expect(['idle', 'paused']).toContain(session.status);
      const tree = (await api1.get(`/v1/sessions/${id}/tree`)).body as {
        nodes: Array<{ id: number; parentId: number | null }>;
        path: number[];
      };
      // Exactly the committed runs' nodes: a prompt and its reply each, no duplicate, none lost.
      expect(tree.nodes).toHaveLength(2 * completedPrompts.get(id)!);
      const ids = tree.nodes.map((n) => n.id);
      expect(new Set(ids).size).toBe(ids.length);
      tree.path.forEach((nodeId, i) => {
        const node = tree.nodes.find((n) => n.id === nodeId)!;
        expect(node.parentId).toBe(i === 0 ? null : tree.path[i - 1]);
      });
    }
  }, 180_000);
});
