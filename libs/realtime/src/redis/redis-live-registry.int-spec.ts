import { commandsDuring, PrivateRedis } from '@canopy/testing';
import { Redis } from 'ioredis';

import type { LiveEntry, LivePresence } from '../ports';
import { describeLiveRegistryContract } from '../testing';
import { uniqueId } from '../testing/wait';
import {
  RedisLiveRegistry,
  startLiveRegistryHeartbeat,
  type RedisLiveRegistryOptions,
} from './redis-live-registry';
import { deleteKeys, keysUnder, testPrefix, TestConnections } from './redis-test-support';

const PREFIX = testPrefix('redis-live-registry');
const connections = new TestConnections();
let admin: Redis;

beforeAll(() => {
  admin = connections.connect();
});

afterAll(async () => {
  await deleteKeys(admin, PREFIX);
  await connections.closeAll();
});

describeLiveRegistryContract('redis', () => {
  const redis = connections.connect();
  const registry = new RedisLiveRegistry({ redis, prefix: PREFIX });
  return Promise.resolve({
    registry,
    cleanup: async () => {
      await registry.close();
      await connections.close(redis);
    },
  });
});

/** Waits for an asynchronous condition, with a deadline. */
async function until(what: string, condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('RedisLiveRegistry', () => {
  const registries: RedisLiveRegistry[] = [];
  const stops: (() => void)[] = [];
  let tenant: string;

  /** An "api instance": its own connection and registry over the shared Redis. */
  function instance(options: Partial<RedisLiveRegistryOptions> = {}): RedisLiveRegistry {
    const registry = new RedisLiveRegistry({ redis: connections.connect(), prefix: PREFIX, ...options });
    registries.push(registry);
    return registry;
  }

  function presence(id: string, instanceName: string, patch: Partial<LivePresence> = {}): LivePresence {
    return {
      tenantId: tenant,
      id,
      title: null,
      status: 'idle',
      userId: null,
      instance: instanceName,
      controllers: 1,
      observers: 0,
      worker: null,
      ...patch,
    };
  }

  async function entry(registry: RedisLiveRegistry, id: string): Promise<LiveEntry> {
    const found = await registry.get(tenant, id);
    if (!found) throw new Error(`expected session ${id} to be live`);
    return found;
  }

  beforeEach(() => {
    tenant = uniqueId('tenant');
  });

  afterEach(async () => {
    for (const stop of stops.splice(0)) stop();
    for (const registry of registries.splice(0)) await registry.close();
  });

  it('merges the presences two instances hold of one session, seen alike from both', async () => {
    const a = instance();
    const b = instance();
    await a.upsert(presence('s1', 'api-a', { controllers: 1, observers: 2, title: 'first' }));
    await b.upsert(presence('s1', 'api-b', { controllers: 2, observers: 1, worker: 'w-1', title: 'second' }));

    const merged = await entry(a, 's1');
    expect(merged).toMatchObject({
      controllers: 3,
      observers: 3,
      title: 'second',
      where: { api: ['api-a', 'api-b'], worker: 'w-1' },
    });
    expect(await b.get(tenant, 's1')).toEqual(merged);
    expect(await b.list(tenant)).toEqual([merged]);
    expect(await a.list(tenant)).toEqual([merged]);
  });

  it("drops a dead instance's presence once its TTL passes without a heartbeat", async () => {
    // The live instance's TTL leaves a loaded machine ample slack between heartbeats.
    const dead = instance({ presenceTtlMs: 300 });
    const alive = instance({ presenceTtlMs: 1_000 });
    stops.push(startLiveRegistryHeartbeat(alive, { intervalMs: 100 }));
    await dead.upsert(presence('shared', 'api-dead', { controllers: 2 }));
    await alive.upsert(presence('shared', 'api-alive', { controllers: 1 }));
    await dead.upsert(presence('dead-only', 'api-dead'));
    const { since } = await entry(alive, 'shared');

    await until('the dead presences to expire', async () => {
      const [shared, deadOnly] = [await alive.get(tenant, 'shared'), await alive.get(tenant, 'dead-only')];
      return shared?.where.api.length === 1 && deadOnly === null;
    });
    const shared = await entry(alive, 'shared');
    expect(shared).toMatchObject({ controllers: 1, since, where: { api: ['api-alive'], worker: null } });
    expect(await alive.get(tenant, 'dead-only')).toBeNull();
    expect(await alive.list(tenant)).toEqual([shared]);
    expect(await admin.zrange(`${PREFIX}:{live}:tenant:${tenant}`, 0, -1)).toEqual(['shared']);

    // The last instance dies too: the session, its index entries and keys go.
    for (const stop of stops.splice(0)) stop();
    await until('every presence to expire', async () => (await alive.get(tenant, 'shared')) === null);
    expect(await alive.list(tenant)).toEqual([]);
    expect((await alive.list(null)).filter((e) => e.tenantId === tenant)).toEqual([]);
    expect(await keysUnder(admin, `${PREFIX}:{live}:session:${tenant}`)).toEqual([]);
    expect(await keysUnder(admin, `${PREFIX}:{live}:tenant:${tenant}`)).toEqual([]);
    const all = await admin.zrange(`${PREFIX}:{live}:all`, 0, -1);
    expect(all.filter((member) => member.startsWith(`${tenant}:`))).toEqual([]);
  });

  it('keeps a presence alive past its TTL while the heartbeat runs', async () => {
    const registry = instance({ presenceTtlMs: 400 });
    stops.push(startLiveRegistryHeartbeat(registry, { intervalMs: 50 }));
    await registry.upsert(presence('s1', 'api-1'));
    const { since } = await entry(registry, 's1');
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect((await entry(registry, 's1')).since).toBe(since);
  });

  it('writes a presence again on heartbeat when it expired meanwhile (a stalled process)', async () => {
    const registry = instance({ presenceTtlMs: 100 });
    await registry.upsert(presence('s1', 'api-1', { controllers: 3 }));
    await until('the presence to expire', async () => (await registry.get(tenant, 's1')) === null);

    await registry.heartbeat();
    expect((await entry(registry, 's1')).controllers).toBe(3);
  });

  it('does not bring back on heartbeat a presence removed meanwhile', async () => {
    const registry = instance({ presenceTtlMs: 100 });
    await registry.upsert(presence('s1', 'api-1'));
    await registry.remove(tenant, 's1', 'api-1');
    await registry.heartbeat();
    expect(await registry.get(tenant, 's1')).toBeNull();
  });

  it('lists every tenant across instances, newest first', async () => {
    const a = instance({ now: () => 1_000 });
    const b = instance({ now: () => 2_000 });
    const other = uniqueId('tenant');
    await b.upsert(presence('s-new', 'api-b'));
    await a.upsert({ ...presence('s-old', 'api-a'), tenantId: other });

    const listed = (await a.list(null)).filter((e) => e.tenantId === tenant || e.tenantId === other);
    expect(listed.map((e) => [e.tenantId, e.id, e.since])).toEqual([
      [tenant, 's-new', new Date(2_000).toISOString()],
      [other, 's-old', new Date(1_000).toISOString()],
    ]);
    expect(await b.list(other)).toEqual([listed[1]]);
  });

  it('orders sessions that became live in the same millisecond by arrival, newest first', async () => {
    const registry = instance({ now: () => 1_000 });
    for (const id of ['a', 'b', 'c']) await registry.upsert(presence(id, 'api-1'));
    await registry.upsert(presence('a', 'api-2'));
    expect((await registry.list(tenant)).map((e) => e.id)).toEqual(['c', 'b', 'a']);
  });

  it('takes the newest non-null worker when two presences name one', async () => {
    const a = instance();
    const b = instance();
    await a.upsert(presence('s1', 'api-1', { worker: 'w-old' }));
    await b.upsert(presence('s1', 'api-2', { worker: 'w-new' }));
    await a.upsert(presence('s1', 'api-3', { worker: null }));
    expect((await entry(b, 's1')).where.worker).toBe('w-new');
  });

  it('removes the presences it still holds on close, leaving the other instances’', async () => {
    const leaving = instance();
    const staying = instance();
    await leaving.upsert(presence('s1', 'api-leaving'));
    await leaving.upsert(presence('s2', 'api-leaving'));
    await staying.upsert(presence('s1', 'api-staying'));

    await leaving.close();
    expect((await entry(staying, 's1')).where.api).toEqual(['api-staying']);
    expect(await staying.get(tenant, 's2')).toBeNull();
  });

  it('does not let a delimiter inside ids merge two sessions', async () => {
    const registry = instance();
    await registry.upsert({ ...presence('c', 'api:1'), tenantId: `${tenant}:b` });
    await registry.upsert({ ...presence('b:c', 'api'), tenantId: tenant });
    expect((await registry.get(`${tenant}:b`, 'c'))?.where.api).toEqual(['api:1']);
    expect((await registry.get(tenant, 'b:c'))?.where.api).toEqual(['api']);
    expect((await registry.list(`${tenant}:b`)).map((e) => [e.tenantId, e.id])).toEqual([
      [`${tenant}:b`, 'c'],
    ]);
    const mine = (await registry.list(null)).filter((e) => e.tenantId.startsWith(tenant));
    expect(mine.map((e) => [e.tenantId, e.id]).sort()).toEqual([
      [tenant, 'b:c'],
      [`${tenant}:b`, 'c'],
    ]);
  });
});

describe('RedisLiveRegistry: commands per write (a private Redis, so INFO counts only these)', () => {
  let server: PrivateRedis;
  let redis: Redis;
  let registry: RedisLiveRegistry;

  beforeAll(async () => {
    server = await PrivateRedis.start();
    redis = new Redis(server.url);
    registry = new RedisLiveRegistry({ redis, prefix: 'counts' });
  }, 30_000);

  afterAll(async () => {
    await registry?.close();
    await redis?.quit();
    await server?.down();
  }, 30_000);

  const commands = (work: () => Promise<unknown>) => commandsDuring(redis, work);

  const presence = (patch: Partial<LivePresence> = {}): LivePresence => ({
    tenantId: 't',
    id: 's',
    title: null,
    status: 'idle',
    userId: null,
    instance: 'api-1',
    controllers: 0,
    observers: 0,
    worker: null,
    ...patch,
  });

  it('replaces a presence the instance still holds in four commands, without reading the entry', async () => {
    expect(await registry.upsert(presence())).toEqual({ created: true });
    await registry.upsert(presence({ instance: 'api-2' }));
    // Writes are milliseconds apart: within one, the entry's new expiry would not be later (PEXPIRE GT).
    await new Promise((resolve) => setTimeout(resolve, 5));

    const calls = await commands(() => registry.upsert(presence({ status: 'busy', controllers: 1 })));
    expect(calls).toEqual({ evalsha: 1, incr: 1, set: 1, pexpire: 1 });
    expect(await registry.get('t', 's')).toMatchObject({
      status: 'busy',
      controllers: 1,
      where: { api: ['api-1', 'api-2'] },
    });
  });

  it('refreshes a held presence and its entry in two commands per presence on heartbeat', async () => {
    const beating = new RedisLiveRegistry({ redis, prefix: 'counts-heartbeat' });
    await beating.upsert(presence({ id: 'h1' }));
    await beating.upsert(presence({ id: 'h2' }));
    await beating.heartbeat(); // loads the script
    // Heartbeats are seconds apart: within one millisecond the new expiry would not be later (PEXPIRE GT).
    await new Promise((resolve) => setTimeout(resolve, 5));

    const calls = await commands(() => beating.heartbeat());
    expect(calls).toEqual({ evalsha: 1, pexpire: 4 });
    await beating.close();
  });
});
