// The built apps on a Redis Cluster (REDIS_CLUSTER_NODES): 2 apis + 1 worker over a private 3-master cluster
// (PrivateRedisCluster: redis-server --cluster-enabled on free ports) and the machine's Postgres. What the contract
// suites check adapter by adapter, here through the deployables: runs queued through BullMQ on the cluster, a
// session's events over sharded pub/sub from the worker to a subscriber on the other api in order, a cancel through
// either api reaching the worker, the live registry and the activity feed, and every key of the deployment under
// its hash tag (the queue's keys in one slot, a session's keys in one slot).

import { Api, newTenant } from './support/api-client';
import { WsClient, wsUrl } from './support/ws-client';
import { Cluster, PrivateRedisCluster, eventually } from '@canopy/testing';

let redis: PrivateRedisCluster;
let cluster: Cluster;
let api1: Api;
let api2: Api;
let key: string;

beforeAll(async () => {
  redis = await PrivateRedisCluster.start(3);
  cluster = await new Cluster({
    apis: 2,
    workers: 1,
    // REDIS_URL selects the distributed runtime (and would carry credentials); the seed nodes name the cluster.
    redisUrl: `redis://${redis.nodes[0]}`,
    env: { REDIS_CLUSTER_NODES: redis.nodes.join(',') },
    readyTimeoutMs: 90_000,
  }).start();
  key = (await newTenant({ url: cluster.api(1) } as never, 'redis-cluster')).key;
  api1 = new Api(cluster.api(1), key);
  api2 = new Api(cluster.api(2), key);
}, 150_000);

afterAll(async () => {
  await cluster?.stop();
  await redis?.stop();
}, 60_000);

describe('the deployment on a Redis Cluster', () => {
  it('runs a prompt on the worker and delivers its events to a subscriber on the other api, in order', async () => {
    const session = (await api1.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 20 } })).body;
    const ws = await WsClient.connect(wsUrl(cluster.api(2), key));
    await ws.request('subscribe', { sessionId: session.id });
    const prompt = await api1.post(`/v1/sessions/${session.id}/prompt`, {
      content: 'north east south west',
      wait: true,
    });
    expect(prompt).toMatchObject({ status: 200, body: { finalResponse: 'Echo: north east south west' } });
    // The run executed on the worker, not on an api.
    const run = (await api2.get(`/v1/runs/${prompt.body.runId}`)).body;
    expect(run).toMatchObject({ status: 'completed' });
    await eventually(() =>
      expect(ws.events(session.id).some((e) => e.event === 'store' && e.data.kind === 'state')).toBe(true),
    );
    const events = ws.events(session.id);
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    const text = events
      .filter((e) => e.event === 'text_delta')
      .map((e) => (e.data as { delta: string }).delta)
      .join('');
    expect(text).toBe('Echo: north east south west');
    expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(['turn', 'tree', 'store', 'title']));
    await ws.close();
  }, 60_000);

  it('resumes a subscriber with `after` on the other api from the stream kept on the cluster', async () => {
    const session = (await api2.post('/v1/sessions', { model: 'mock:echo' })).body;
    const first = await WsClient.connect(wsUrl(cluster.api(1), key));
    await first.request('subscribe', { sessionId: session.id });
    await api2.post(`/v1/sessions/${session.id}/prompt`, { content: 'one two three four', wait: true });
    await eventually(() => expect(first.events(session.id).some((e) => e.event === 'turn')).toBe(true));
    const seen = first.events(session.id).filter((e) => e.event !== 'snapshot');
    expect(seen.length).toBeGreaterThan(3);
    const mid = seen[Math.floor(seen.length / 2)]!.seq;
    await first.close();
    const resumed = await WsClient.connect(wsUrl(cluster.api(2), key));
    await resumed.request('subscribe', { sessionId: session.id, after: mid });
    const wanted = first
      .events(session.id)
      .filter((e) => e.event !== 'snapshot' && e.seq > mid)
      .map((e) => e.seq);
    await eventually(() =>
      expect(
        resumed
          .events(session.id)
          .filter((e) => e.seq <= wanted[wanted.length - 1]!)
          .map((e) => e.seq),
      ).toEqual(wanted),
    );
    await resumed.close();
  }, 60_000);

  it('stops a run on the worker when the cancel comes through the other api', async () => {
    const session = (await api1.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 100 } })).body;
    const { body } = await api1.post(`/v1/sessions/${session.id}/prompt`, { content: 'w '.repeat(50) });
    await eventually(async () =>
      expect((await api1.get(`/v1/runs/${body.runId}`)).body.status).toBe('running'),
    );
    const cancel = await api2.post(`/v1/sessions/${session.id}/cancel`);
    expect(cancel).toMatchObject({ status: 200, body: { runId: body.runId } });
    await eventually(async () =>
      expect((await api2.get(`/v1/runs/${body.runId}`)).body.status).toBe('cancelled'),
    );
    expect((await api1.get(`/v1/sessions/${session.id}`)).body.status).toBe('idle');
  }, 60_000);

  it('names where a watched session lives on either api, and announces it on the activity feed', async () => {
    const feed = await WsClient.connect(wsUrl(cluster.api(2), key));
    await feed.request('activity');
    const session = (await api1.post('/v1/sessions', { model: 'mock:echo' })).body;
    const ws = await WsClient.connect(wsUrl(cluster.api(1), key));
    await ws.request('subscribe', { sessionId: session.id });
    for (const api of [api1, api2]) {
      await eventually(async () => {
        const entry = (await api.get(`/v1/live/${session.id}`)).body;
        expect(entry).toMatchObject({ id: session.id });
        expect(entry.where.api).toContain('api-1');
      });
    }
    await eventually(() =>
      expect(
        feed.frames.some(
          (f) =>
            (f as { event?: string }).event === 'opened' &&
            (f as { data?: { id?: string } }).data?.id === session.id,
        ),
      ).toBe(true),
    );
    await Promise.all([ws.close(), feed.close()]);
  }, 60_000);

  it('keeps every key of the deployment under a hash tag: the queue in one slot, each session in one', async () => {
    const client = redis.connect();
    try {
      await client.connect();
      const keys: string[] = [];
      for (const node of client.nodes('master')) {
        let cursor = '0';
        do {
          const [next, batch] = await node.scan(cursor, 'MATCH', `*${cluster.prefix}*`, 'COUNT', 1000);
          keys.push(...batch);
          cursor = next;
        } while (cursor !== '0');
      }
      expect(keys.length).toBeGreaterThan(0);
      // Every key names a hash tag (a multi-key script or MULTI on it stays in one slot).
      expect(keys.filter((k) => !/\{[^}]+\}/.test(k))).toEqual([]);
      const bull = keys.filter((k) => k.includes(':bull:') || k.includes('}:canopy-'));
      expect(bull.length).toBeGreaterThan(0);
      const slots = new Set(await Promise.all(bull.map((k) => client.call('CLUSTER', 'KEYSLOT', k))));
      expect(slots.size).toBe(1);
    } finally {
      client.disconnect();
    }
  }, 60_000);
});
