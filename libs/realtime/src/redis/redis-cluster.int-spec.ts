// The Redis adapters on a Redis Cluster: the realtime contract suites against a private 3-master cluster started
// for this file (every session's keys and channel share a hash tag; its events go over sharded pub/sub), plus a
// check that a session's events really travel by SPUBLISH to the shard that owns its slot.

import { freePort, PrivateRedisCluster } from '@canopy/testing';
import { Cluster } from 'ioredis';

import {
  describeActivityFeedContract,
  describeCredentialNoticesContract,
  describeEventBusContract,
  describeLiveRegistryContract,
} from '../testing';
import { uniqueId, waitFor } from '../testing/wait';
import { RedisActivityFeed } from './redis-activity-feed';
import { publishInOrder } from '@canopy/redis';
import { RedisCredentialNotices } from './redis-credential-notices';
import { RedisEventBus } from './redis-event-bus';
import { RedisLiveRegistry } from './redis-live-registry';

const PREFIX = 'canopy-test:redis-cluster';
const REPLAY_LIMIT = 10;
let cluster: PrivateRedisCluster;
const open = new Set<Cluster>();

function connect(): Cluster {
  const connection = cluster.connect();
  connection.on('error', () => undefined); // the private cluster goes away at the end of the file
  open.add(connection);
  return connection;
}

async function close(connection: Cluster): Promise<void> {
  open.delete(connection);
  try {
    await connection.quit();
  } catch {
    connection.disconnect();
  }
}

beforeAll(async () => {
  cluster = await PrivateRedisCluster.start(3);
}, 60_000);

afterAll(async () => {
  await Promise.all([...open].map(close));
  await cluster?.stop();
});

describeEventBusContract(
  'redis cluster',
  () => {
    const start = () => {
      const redis = connect();
      const bus = new RedisEventBus({
        redis,
        prefix: PREFIX,
        replayLimit: REPLAY_LIMIT,
        replayTtlSeconds: 600,
        onListenerError: () => {},
      });
      return { redis, bus };
    };
    const stop = async (instance: { redis: Cluster; bus: RedisEventBus }) => {
      await instance.bus.close();
      await close(instance.redis);
    };
    let current = start();
    return Promise.resolve({
      bus: current.bus,
      restart: async () => {
        await stop(current);
        current = start();
        return current.bus;
      },
      cleanup: () => stop(current),
    });
  },
  { replayLimit: REPLAY_LIMIT },
);

describeLiveRegistryContract('redis cluster', () => {
  const redis = connect();
  const registry = new RedisLiveRegistry({ redis, prefix: `${PREFIX}:${uniqueId('live')}` });
  return Promise.resolve({
    registry,
    cleanup: async () => {
      await registry.close();
      await close(redis);
    },
  });
});

describeActivityFeedContract('redis cluster', () => {
  const redis = connect();
  const feed = new RedisActivityFeed({ redis, prefix: PREFIX, onListenerError: () => {} });
  return Promise.resolve({
    feed,
    cleanup: async () => {
      await feed.close();
      await close(redis);
    },
  });
});

describeCredentialNoticesContract('redis cluster, two processes', () => {
  const connections = [connect(), connect()];
  const [first, second] = connections.map(
    (redis) => new RedisCredentialNotices({ redis, prefix: PREFIX, onListenerError: () => {} }),
  );
  return Promise.resolve({
    first: first!,
    second: second!,
    cleanup: async () => {
      await Promise.all([first!.close(), second!.close()]);
      await Promise.all(connections.map(close));
    },
  });
});

describe('RedisEventBus on a cluster', () => {
  it('spreads sessions over the shards and publishes each by SPUBLISH on the shard of its slot', async () => {
    const redis = connect();
    const bus = new RedisEventBus({
      redis,
      prefix: PREFIX,
      replayLimit: REPLAY_LIMIT,
      replayTtlSeconds: 600,
    });
    const tenant = uniqueId('tenant');
    const sessions = Array.from({ length: 12 }, () => uniqueId('session'));
    const seen = new Map<string, number[]>(sessions.map((s) => [s, []]));
    const unsubscribes = await Promise.all(
      sessions.map((s) => bus.subscribe(tenant, s, (event) => seen.get(s)!.push(event.seq))),
    );
    const published = await Promise.all(
      sessions.map((s) =>
        bus.publish(tenant, s, [{ type: 'text_delta', data: { runId: 'r', index: 0, delta: 'x' } }]),
      ),
    );
    await waitFor('every session', () => sessions.every((s) => seen.get(s)!.length === 1));
    expect(sessions.map((s) => seen.get(s))).toEqual(published.map((events) => [events[0]!.seq]));

    // The streams live on more than one master, and each master counted the SPUBLISH of its own sessions only.
    const nodes = redis.nodes('master');
    const streams = await Promise.all(nodes.map((node) => node.keys(`${PREFIX}:session:{${tenant}:*`)));
    expect(streams.filter((keys) => keys.length > 0).length).toBeGreaterThan(1);
    const spublished = await Promise.all(
      nodes.map(async (node) =>
        Number(/cmdstat_spublish:calls=(\d+)/.exec(await node.info('commandstats'))?.[1] ?? 0),
      ),
    );
    expect(spublished.filter((calls) => calls > 0).length).toBeGreaterThan(1);

    await Promise.all(unsubscribes.map((unsubscribe) => unsubscribe()));
    await bus.close();
  });
});

describe('publishInOrder on a cluster', () => {
  const publishes = async (node: { info(section: string): Promise<string> }) =>
    Number(/cmdstat_publish:calls=(\d+)/.exec(await node.info('commandstats'))?.[1] ?? 0);

  it('sends even the first publish of a connection still connecting to the first master by address', async () => {
    const probe = connect();
    await probe.ping();
    const masters = probe.nodes('master');
    const first = [...masters].sort((a, b) =>
      `${a.options.host}:${a.options.port}`.localeCompare(`${b.options.host}:${b.options.port}`),
    )[0]!;
    const before = await Promise.all(masters.map(publishes));

    const fresh = connect();
    expect(fresh.status).not.toBe('ready');
    const channel = `${PREFIX}:ordered:${uniqueId('channel')}`;
    for (let i = 0; i < 3; i += 1) await publishInOrder(fresh, channel, String(i));

    const after = await Promise.all(masters.map(publishes));
    const added = masters.map((node, i) => [node === first, after[i]! - before[i]!] as const);
    expect(added).toEqual(masters.map((node) => [node === first, node === first ? 3 : 0]));
    await close(fresh);
    await close(probe);
  });

  it('fails, rather than waits for ever, while the cluster cannot be reached', async () => {
    const nowhere = new Cluster([{ host: '127.0.0.1', port: await freePort() }], {
      lazyConnect: true,
      clusterRetryStrategy: () => 100,
      redisOptions: { commandTimeout: 300 },
    });
    nowhere.on('error', () => undefined);
    const started = Date.now();
    await expect(publishInOrder(nowhere, `${PREFIX}:nowhere`, 'x')).rejects.toThrow(
      /not ready within 300 ms/,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    nowhere.disconnect();
  });
});
