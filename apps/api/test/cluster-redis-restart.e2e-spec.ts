// Redis restarted under a running deployment: apis and workers reconnect on their own, a run in flight still ends
// cleanly (its commit goes to Postgres), a subscriber that reconnects with `after` resumes (missed events, or a
// snapshot when Redis lost them), and the deployment keeps working.

import { Cluster, PrivateRedis, eventually } from '@canopy/testing';
import { Api, SseReader, newTenant } from './support/api-client';

let redis: PrivateRedis;
let cluster: Cluster;
let api1: Api;
let api2: Api;
let key: string;

beforeAll(async () => {
  redis = await PrivateRedis.start();
  cluster = await new Cluster({ apis: 2, workers: 1, redisUrl: redis.url }).start();
  key = (await newTenant({ url: cluster.api(1) } as never, 'redis-restart')).key;
  api1 = new Api(cluster.api(1), key);
  api2 = new Api(cluster.api(2), key);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
  await redis?.down();
}, 60_000);

describe('Redis restarted mid-run', () => {
  it('lets the run end cleanly, the processes reconnect, and subscribers resume', async () => {
    const session = (await api1.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 80 } })).body;
    const sse = await SseReader.open(`${cluster.api(2)}/v1/sessions/${session.id}/events?token=${key}`);
    await sse.waitFor((e) => e.event === 'snapshot');
    const { body } = await api1.post(`/v1/sessions/${session.id}/prompt`, { content: 'w '.repeat(25) });
    await sse.waitFor((e) => e.event === 'text_delta');
    const lastSeen = Number(sse.events.filter((e) => e.id !== undefined).at(-1)!.id);

    await redis.down();
    await new Promise((r) => setTimeout(r, 700));
    await redis.up();

    // The run still ends cleanly: committed in Postgres, the session idle again.
    await eventually(
      async () => expect((await api1.get(`/v1/runs/${body.runId}`)).body.status).toBe('completed'),
      {
        timeoutMs: 30_000,
        intervalMs: 200,
      },
    );
    expect((await api2.get(`/v1/sessions/${session.id}`)).body.status).toBe('idle');
    expect((await api2.get(`/v1/sessions/${session.id}/tree`)).body.nodes).toHaveLength(2);

    // Both apis are ready again (they reconnected by themselves).
    for (const api of [api1, api2]) {
      await eventually(
        async () => expect((await api.get('/readyz')).body.checks).toEqual({ database: 'ok', redis: 'ok' }),
        {
          timeoutMs: 15_000,
        },
      );
    }

    // A subscriber that reconnects with `after` resumes: the events Redis still has, or (it lost them) a snapshot
    // that shows the committed reply.
    sse.close();
    const resumed = await SseReader.open(
      `${cluster.api(2)}/v1/sessions/${session.id}/events?token=${key}&after=${lastSeen}`,
    );
    const first = await resumed.waitFor(() => true);
    if (first.event === 'snapshot') {
      expect(first.data.tree.nodes).toHaveLength(2);
      expect(first.data.session.status).toBe('idle');
    } else {
      expect(Number(first.id)).toBeGreaterThan(lastSeen);
    }

    // The deployment keeps working: a new run goes through a worker and reaches the resumed subscriber on api #2.
    const next = await api1.post(`/v1/sessions/${session.id}/prompt`, {
      content: 'after the restart',
      wait: true,
    });
    expect(next.body.finalResponse).toBe('Echo: after the restart');
    await resumed.waitFor((e) => e.event === 'turn');
    const ids = resumed.events.filter((e) => e.id !== undefined).map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    resumed.close();
  }, 120_000);
});
