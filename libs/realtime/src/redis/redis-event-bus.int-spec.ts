import { randomUUID } from 'node:crypto';

import type { SessionEvent, SessionEventInput } from '@canopy/core';
import { PrivateRedis } from '@canopy/testing';
import type { Redis } from 'ioredis';

import type { Unsubscribe } from '../ports';
import { describeEventBusContract, waitFor } from '../testing';
import { uniqueId } from '../testing/wait';
import { RedisEventBus, type RedisEventBusOptions } from './redis-event-bus';
import {
  deleteKeys,
  killPubSubConnection,
  keysUnder,
  testPrefix,
  TestConnections,
} from './redis-test-support';

const PREFIX = testPrefix('redis-event-bus');
const REPLAY_LIMIT = 10;
const connections = new TestConnections();
let admin: Redis;

beforeAll(() => {
  admin = connections.connect();
});

afterAll(async () => {
  await deleteKeys(admin, PREFIX);
  await connections.closeAll();
});

describeEventBusContract(
  'redis',
  () => {
    // A restart is a new process: new connections and a new bus over the same Redis.
    const start = () => {
      const redis = connections.connect();
      const bus = new RedisEventBus({
        redis,
        prefix: PREFIX,
        replayLimit: REPLAY_LIMIT,
        replayTtlSeconds: 600,
        onListenerError: () => {},
      });
      return { redis, bus };
    };
    const stop = async (instance: { redis: Redis; bus: RedisEventBus }) => {
      await instance.bus.close();
      await connections.close(instance.redis);
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

const deltas = (count: number, from = 0): SessionEventInput[] =>
  Array.from({ length: count }, (_, i) => ({
    type: 'text_delta',
    data: { runId: 'run-1', index: 0, delta: `d${from + i}` },
  }));

/** A wall clock the test moves by hand. */
function manualClock(start = Date.now()) {
  let ms = start;
  return { now: () => ms, advance: (by: number) => (ms += by) };
}

const bySeq = (a: SessionEvent, b: SessionEvent) => a.seq - b.seq;

/** Waits for an asynchronous condition, with a deadline. */
async function until(what: string, condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('RedisEventBus', () => {
  // These tests watch Redis's commands (MONITOR) and flush its scripts: on a Redis of their own. On the one the
  // machine's tests share, MONITOR sees every other process's commands, and under load one of them can arrive between
  // MONITOR's OK and ioredis taking the connection for a monitor ("Command queue state error").
  let server: PrivateRedis;
  let connections: TestConnections;
  let admin: Redis;

  beforeAll(async () => {
    server = await PrivateRedis.start();
    connections = new TestConnections(server.url);
    admin = connections.connect();
  });

  afterAll(async () => {
    await connections?.closeAll();
    await server?.down();
  });

  const buses: RedisEventBus[] = [];
  const unsubscribes: Unsubscribe[] = [];
  let tenant: string;
  let session: string;

  /** Records, labelled, the commands Redis runs on these sessions' keys (MONITOR, on a connection of its own). */
  async function watchSessions(
    sessions: Record<string, string>,
  ): Promise<{ seen: string[]; stop: () => void }> {
    const monitor = await connections.connect().monitor();
    const seen: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      const key = args.find((arg) => arg.includes(`{${tenant}:`));
      for (const [label, id] of Object.entries(sessions)) {
        if (key?.includes(`:${id}}`)) seen.push(`${label} ${args[0]!.toLowerCase()}`);
      }
    });
    return { seen, stop: () => monitor.disconnect() };
  }

  /** An "api instance": its own connections and bus over the shared Redis. */
  function instance(options: Partial<RedisEventBusOptions> = {}): RedisEventBus {
    const bus = new RedisEventBus({
      redis: connections.connect(),
      prefix: PREFIX,
      replayLimit: REPLAY_LIMIT,
      replayTtlSeconds: 600,
      ...options,
    });
    buses.push(bus);
    return bus;
  }

  async function record(bus: RedisEventBus, into: SessionEvent[] = []): Promise<SessionEvent[]> {
    unsubscribes.push(await bus.subscribe(tenant, session, (event) => into.push(event)));
    return into;
  }

  const channelName = (t = tenant, s = session) => `${PREFIX}:session:{${t}:${s}}`;
  const streamKey = (t = tenant, s = session) => `${channelName(t, s)}:stream`;

  beforeEach(() => {
    tenant = uniqueId('tenant');
    session = uniqueId('session');
  });

  afterEach(async () => {
    for (const unsubscribe of unsubscribes.splice(0)) await unsubscribe();
    for (const bus of buses.splice(0)) await bus.close();
  });

  describe('across instances', () => {
    it('delivers what instance A publishes to a subscriber on instance B, in order, exactly once', async () => {
      const a = instance();
      const b = instance();
      const seen = await record(b);

      const published: SessionEvent[] = [];
      for (let i = 0; i < 10; i++) published.push(...(await a.publish(tenant, session, deltas(3, i * 3))));
      await waitFor('every event on B', () => seen.length >= published.length);
      const marker = await a.publish(tenant, session, deltas(1, 99));
      await waitFor('the marker on B', () => seen.length >= published.length + 1);

      expect(seen).toEqual([...published, ...marker]);
      expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => seen[0]!.seq + i));
    });

    it('gives consecutive seqs and one order to every subscriber while both instances publish at once', async () => {
      const a = instance({ replayLimit: 1_000 });
      const b = instance({ replayLimit: 1_000 });
      const onA = await record(a);
      const onB = await record(b);

      const batches = await Promise.all(
        Array.from({ length: 40 }, (_, p) =>
          (p % 2 === 0 ? a : b).publish(tenant, session, deltas(5, p * 5)),
        ),
      );
      const all = batches.flat().sort(bySeq);
      expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => all[0]!.seq + i));
      for (const batch of batches) expect(batch.map((e) => e.seq - batch[0]!.seq)).toEqual([0, 1, 2, 3, 4]);

      await waitFor('every event on both instances', () => onA.length >= 200 && onB.length >= 200);
      expect(onA).toEqual(all);
      expect(onB).toEqual(all);

      // Replay, from either instance, agrees with live delivery.
      const last = all[all.length - 1]!.seq;
      const expected = { events: all, complete: true, lastSeq: last };
      expect(await a.replay(tenant, session, all[0]!.seq - 1)).toEqual(expected);
      expect(await b.replay(tenant, session, all[0]!.seq - 1)).toEqual(expected);
      expect(await b.lastSeq(tenant, session)).toBe(last);
    });

    it('starts a subscription mid-stream without a gap or a duplicate', async () => {
      const a = instance();
      const b = instance();
      const published: SessionEvent[] = [];
      let stop = false;
      const pump = (async () => {
        for (let i = 0; !stop; i++) published.push(...(await a.publish(tenant, session, deltas(2, i * 2))));
      })();
      await waitFor('the publisher to get going', () => published.length >= 20);

      const seen = await record(b);
      // Events of batches published after subscribe resolved; the batch in flight then may or may not count.
      const boundary = published.length + 2;
      await waitFor('more events', () => seen.length >= 20);
      stop = true;
      await pump;
      const last = published[published.length - 1]!;
      await waitFor('the last event', () => seen[seen.length - 1]?.seq === last.seq);

      // A contiguous run up to the end (no gap, no duplicate), of whole batches, holding every later batch.
      expect(seen).toEqual(published.slice(published.length - seen.length));
      expect(seen[0]!.seq % 2).toBe(published[0]!.seq % 2);
      expect(seen.length).toBeGreaterThanOrEqual(published.length - boundary);
    });

    it('continues the sequence in a new bus instance (a process restart) above the old seqs', async () => {
      const old = instance();
      const before = await old.publish(tenant, session, deltas(3));
      await old.close();

      const next = instance();
      const after = await next.publish(tenant, session, deltas(2, 3));
      expect(after.map((e) => e.seq)).toEqual([before[2]!.seq + 1, before[2]!.seq + 2]);
      expect(await next.replay(tenant, session, before[0]!.seq - 1)).toEqual({
        events: [...before, ...after],
        complete: true,
        lastSeq: after[1]!.seq,
      });
    });

    it('shares one subscriber connection between buses without one unsubscribing the other', async () => {
      const subscriber = connections.connect();
      const a = instance({ subscriber });
      const b = instance({ subscriber });
      const onA: SessionEvent[] = [];
      const leaveA = await a.subscribe(tenant, session, (e) => onA.push(e));
      const onB = await record(b);

      const first = await a.publish(tenant, session, deltas(1));
      await waitFor('both', () => onA.length >= 1 && onB.length >= 1);
      await leaveA();
      await a.close(); // not its connection: stays open
      const second = await b.publish(tenant, session, deltas(1, 1));
      await waitFor('B after A left', () => onB.length >= 2);

      expect(onA).toEqual(first);
      expect(onB).toEqual([...first, ...second]);
      expect(subscriber.status).toBe('ready');
    });
  });

  describe('numbering', () => {
    it('starts a session at the clock in microseconds, then counts by one (seqs beyond 2^32 survive Lua)', async () => {
      const clock = manualClock(1_750_000_000_123);
      const bus = instance({ now: clock.now });
      const seen = await record(bus);

      const first = await bus.publish(tenant, session, deltas(2));
      clock.advance(10_000);
      const second = await bus.publish(tenant, session, deltas(1, 2));

      const seqs = [1_750_000_000_123_000, 1_750_000_000_123_001, 1_750_000_000_123_002];
      expect([...first, ...second].map((e) => e.seq)).toEqual(seqs);
      expect([...first, ...second].map((e) => e.at)).toEqual([
        1_750_000_000_123, 1_750_000_000_123, 1_750_000_010_123,
      ]);
      await waitFor('delivery', () => seen.length >= 3);
      expect(seen).toEqual([...first, ...second]);
      expect((await bus.replay(tenant, session, 0)).events).toEqual([...first, ...second]);
      // One entry per batch, its id the batch's first seq.
      expect(await admin.xrange(streamKey(), '-', '+')).toEqual([
        [`${seqs[0]}-0`, ['n', '2', 'e', expect.stringMatching(/^\[.*"delta":"d0".*"delta":"d1".*\]$/)]],
        [`${seqs[2]}-0`, ['n', '1', 'e', expect.stringContaining('"delta":"d2"')]],
      ]);
    });

    it('publishes a batch with two Redis commands once it knows the session: XADD and PUBLISH', async () => {
      const bus = instance();
      await bus.publish(tenant, session, deltas(1));
      // MONITOR answers on a connection of its own, which ends with disconnect().
      const monitor = await connections.connect().monitor();
      const seen: string[] = [];
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (args.some((arg) => arg.includes(`{${tenant}:${session}}`))) seen.push(args[0]!.toLowerCase());
      });
      await bus.publish(tenant, session, deltas(3, 1));
      await bus.publish(tenant, session, deltas(1, 4));
      const marker = await bus.publish(tenant, session, deltas(1, 5));
      await until('the marker publish to be seen', async () => Promise.resolve(seen.length >= 6));
      monitor.disconnect();
      expect(seen).toEqual(['xadd', 'publish', 'xadd', 'publish', 'xadd', 'publish']);
      expect(await bus.lastSeq(tenant, session)).toBe(marker[0]!.seq);
    });

    it('keeps knowing the sessions it publishes to while 15,000 others pass, and forgets the idle ones', async () => {
      const bus = instance();
      const idle = uniqueId('idle');
      await bus.publish(tenant, idle, deltas(1));
      await bus.publish(tenant, session, deltas(1));
      for (let chunk = 0; chunk < 15; chunk++) {
        const others = Array.from({ length: 1_000 }, (_, i) => `${session}-other-${chunk * 1_000 + i}`);
        await Promise.all(others.map((other) => bus.publish(tenant, other, deltas(1))));
        await bus.publish(tenant, session, deltas(1, chunk + 1));
      }
      const { seen, stop } = await watchSessions({ busy: session, idle });
      const busy = await bus.publish(tenant, session, deltas(1, 16));
      const again = await bus.publish(tenant, idle, deltas(1, 1));
      await until('both publishes to be seen', async () => Promise.resolve(seen.includes('idle publish')));
      stop();
      // The session published to all along: the two-command append; the idle one: appended after its tail by the
      // script (MONITOR shows the script's own commands too).
      expect(seen).toEqual([
        'busy xadd',
        'busy publish',
        'idle evalsha',
        'idle xrevrange',
        'idle xadd',
        'idle expire',
        'idle publish',
      ]);
      expect(await bus.lastSeq(tenant, session)).toBe(busy[0]!.seq);
      expect(await bus.lastSeq(tenant, idle)).toBe(again[0]!.seq);
    }, 60_000);

    it('never forgets a session whose append is in flight, so its next append still goes after it', async () => {
      const bus = instance({ knownSequences: 2 });
      const [a, b, c] = [uniqueId('a'), uniqueId('b'), uniqueId('c')];
      await bus.publish(tenant, a, deltas(1));
      await bus.publish(tenant, b, deltas(1));
      // a's XADD in flight when c comes and fills the map past its 2: the one forgotten is b (a, the oldest, is busy).
      const inFlight = [bus.publish(tenant, a, deltas(1, 1)), bus.publish(tenant, c, deltas(1))];
      await Promise.all(inFlight);
      const { seen, stop } = await watchSessions({ a, b });
      const last = await bus.publish(tenant, a, deltas(1, 2));
      await bus.publish(tenant, b, deltas(1, 1));
      await until('both publishes to be seen', async () => Promise.resolve(seen.includes('b publish')));
      stop();
      expect(seen.slice(0, 3)).toEqual(['a xadd', 'a publish', 'b evalsha']);
      expect(await bus.lastSeq(tenant, a)).toBe(last[0]!.seq);
      expect(() => instance({ knownSequences: 0 })).toThrow(RangeError);
    });

    it('restarts at the clock when Redis lost the session (no persistence), and reports the gap', async () => {
      const clock = manualClock();
      const old = instance({ now: clock.now });
      const before = await old.publish(tenant, session, deltas(3));
      await admin.del(streamKey()); // what a Redis restart leaves
      clock.advance(250);

      const bus = instance({ now: clock.now });
      const after = await bus.publish(tenant, session, deltas(1, 3));
      expect(after[0]!.seq).toBe(Math.floor(clock.now() * 1000));
      expect(after[0]!.seq).toBeGreaterThan(before[2]!.seq);
      expect(await bus.replay(tenant, session, before[2]!.seq)).toEqual({
        events: after,
        complete: false,
        lastSeq: after[0]!.seq,
      });
      // The instance that knew the old sequence finds the stream was restarted, and continues above it.
      const next = await old.publish(tenant, session, deltas(1, 4));
      expect(next[0]!.seq).toBe(after[0]!.seq + 1);
    });

    it('continues above the log in a new instance, even if the clock went back', async () => {
      const clock = manualClock();
      const before = await instance({ now: clock.now }).publish(tenant, session, deltas(3));
      clock.advance(-5_000);

      const bus = instance({ now: clock.now });
      const after = await bus.publish(tenant, session, deltas(2, 3));
      expect(after.map((e) => e.seq)).toEqual([before[2]!.seq + 1, before[2]!.seq + 2]);
      expect((await bus.replay(tenant, session, 0)).events).toEqual([...before, ...after]);
    });

    it('takes turns with another instance without reusing a seq: a stale append is refused and redone', async () => {
      const a = instance();
      const b = instance();
      const seen = await record(instance());
      const first = await a.publish(tenant, session, deltas(1));
      const second = await b.publish(tenant, session, deltas(3, 1)); // a does not know of these
      const third = await a.publish(tenant, session, deltas(2, 4));
      const fourth = await b.publish(tenant, session, deltas(1, 6));

      const all = [...first, ...second, ...third, ...fourth];
      expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => first[0]!.seq + i));
      await waitFor('every event', () => seen.length >= all.length);
      expect(seen).toEqual(all);
    });

    it('loads its script again after the server forgot it (a Redis restart empties the script cache)', async () => {
      const bus = instance();
      const before = await bus.publish(tenant, session, deltas(1));
      await admin.script('FLUSH');
      const after = await instance().publish(tenant, session, deltas(1, 1));
      expect(after[0]!.seq).toBe(before[0]!.seq + 1);
    });

    it('does not let a delimiter or a brace inside ids merge two sessions', async () => {
      const bus = instance();
      await bus.publish('a:b', 'c', deltas(1));
      await bus.publish('x}', '{y', deltas(1));
      expect(await bus.lastSeq('a', 'b:c')).toBe(0);
      expect(await bus.lastSeq('x', '}{y')).toBe(0);
      expect(await keysUnder(admin, `${PREFIX}:session:{a%3Ab:c}`)).toEqual([
        `${PREFIX}:session:{a%3Ab:c}:stream`,
      ]);
    });
  });

  describe('bounds', () => {
    it('keeps replayLimit batches, replays the last replayLimit events, and expires the log replayTtlSeconds after a publish', async () => {
      const bus = instance({ replayLimit: 5, replayTtlSeconds: 120 });
      const published: SessionEvent[] = [];
      for (let i = 0; i < 300; i++) published.push(...(await bus.publish(tenant, session, deltas(1, i))));
      const last = await bus.publish(tenant, session, deltas(4, 300));

      // MAXLEN ~ trims whole nodes of the stream: at least replayLimit entries, at most a node (100) more.
      const length = await admin.xlen(streamKey());
      expect(length).toBeGreaterThanOrEqual(5);
      expect(length).toBeLessThanOrEqual(105);
      const ttl = await admin.ttl(streamKey());
      expect(ttl).toBeGreaterThan(100);
      expect(ttl).toBeLessThanOrEqual(120);
      const replay = await bus.replay(tenant, session, 0);
      expect(replay.events.map((e) => e.seq)).toEqual([last[0]!.seq - 1, ...last.map((e) => e.seq)]);
      expect(replay.complete).toBe(false);
      const inside = await bus.replay(tenant, session, last[0]!.seq - 2);
      expect(inside.complete).toBe(true);
      expect(inside.events).toEqual([published[published.length - 1], ...last]);
    });

    it('sets the TTL again once a hundredth of it ran down', async () => {
      const clock = manualClock();
      const bus = instance({ replayTtlSeconds: 1_000, now: clock.now });
      await bus.publish(tenant, session, deltas(2));
      await admin.expire(streamKey(), 500);
      clock.advance(9_000);
      await bus.publish(tenant, session, deltas(1, 2));
      expect(await admin.ttl(streamKey())).toBeLessThanOrEqual(500);
      clock.advance(1_000);
      await bus.publish(tenant, session, deltas(1, 3));
      expect(await admin.ttl(streamKey())).toBeGreaterThan(990);
    });

    it('lets an idle session expire; its next publish starts a new sequence above the old one', async () => {
      const bus = instance({ replayTtlSeconds: 1 });
      const before = await bus.publish(tenant, session, deltas(2));
      await until('the log to expire', async () => (await admin.exists(streamKey())) === 0);
      expect(await bus.lastSeq(tenant, session)).toBe(0);

      const after = await bus.publish(tenant, session, deltas(1, 2));
      expect(after[0]!.seq).toBeGreaterThan(before[1]!.seq + 1);
      expect(await bus.replay(tenant, session, before[1]!.seq)).toEqual({
        events: after,
        complete: false,
        lastSeq: after[0]!.seq,
      });
      expect(await admin.ttl(streamKey())).toBeGreaterThan(0);
    });
  });

  describe('delivery', () => {
    it('gives a subscription added during a batch none of that batch, and all of the next', async () => {
      const bus = instance();
      const late: SessionEvent[] = [];
      let added: Promise<Unsubscribe> | null = null;
      const early = await record(bus, []);
      unsubscribes.push(
        await bus.subscribe(tenant, session, () => {
          added ??= bus.subscribe(tenant, session, (e) => late.push(e));
        }),
      );

      const first = await bus.publish(tenant, session, deltas(4));
      await waitFor('the first batch', () => early.length >= 4 && added !== null);
      unsubscribes.push(await added!);
      const second = await bus.publish(tenant, session, deltas(3, 4));
      await waitFor('the second batch', () => late.length >= 3 && early.length >= 7);

      expect(late).toEqual(second);
      expect(early).toEqual([...first, ...second]);
    });

    it('reports a throwing listener to onListenerError and keeps delivering', async () => {
      const errors: unknown[] = [];
      const bus = instance({ onListenerError: (error) => errors.push(error) });
      const failure = new Error('listener failure (expected by the test)');
      unsubscribes.push(
        await bus.subscribe(tenant, session, () => {
          throw failure;
        }),
      );
      const seen = await record(bus);
      const published = await bus.publish(tenant, session, deltas(2));
      await waitFor('delivery', () => seen.length >= 2);
      expect(seen).toEqual(published);
      expect(errors).toEqual([failure, failure]);
    });

    it('resubscribes after its subscriber connection drops, and catches up on what was published meanwhile', async () => {
      const name = `canopy-test-bus-subscriber-${randomUUID()}`;
      const bus = instance({ subscriber: connections.connect({ connectionName: name }) });
      const seen = await record(bus);
      const before = await bus.publish(tenant, session, deltas(2));
      await waitFor('the first events', () => seen.length >= 2);

      await killPubSubConnection(admin, name);
      const subscribers = async () => {
        const [, count] = (await admin.pubsub('NUMSUB', channelName())) as [string, number];
        return count;
      };
      expect(await subscribers()).toBe(0);
      // Published while nobody listens (ioredis waits before reconnecting): only the replay log has these.
      const during = await bus.publish(tenant, session, deltas(2, 2));
      await waitFor('the catch-up after the reconnect', () => seen.length >= 4);
      expect(await subscribers()).toBe(1);

      const after = await bus.publish(tenant, session, deltas(2, 4));
      await waitFor('live delivery again', () => seen.length >= 6);
      expect(seen).toEqual([...before, ...during, ...after]);
    });

    it('quits the subscriber connection it opened on close, and refuses work once closed', async () => {
      const name = `canopy-test-bus-own-${randomUUID()}`;
      const bus = new RedisEventBus({
        redis: connections.connect({ connectionName: name }),
        prefix: PREFIX,
        replayLimit: REPLAY_LIMIT,
        replayTtlSeconds: 600,
      });
      await bus.subscribe(tenant, session, () => {});
      const pubsubClients = async () =>
        ((await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string).includes(` name=${name} `);
      expect(await pubsubClients()).toBe(true);

      await bus.close();
      await until('the subscriber connection to close', async () => !(await pubsubClients()));
      await expect(bus.publish(tenant, session, deltas(1))).rejects.toThrow('closed');
      await expect(bus.subscribe(tenant, session, () => {})).rejects.toThrow('closed');
    });

    it('rejects a replay limit or TTL below one, a braced prefix and an ioredis keyPrefix', () => {
      const redis = admin;
      const base = { redis, prefix: PREFIX, replayLimit: 5, replayTtlSeconds: 5 };
      expect(() => new RedisEventBus({ ...base, replayLimit: 0 })).toThrow(RangeError);
      expect(() => new RedisEventBus({ ...base, replayTtlSeconds: 0.5 })).toThrow(RangeError);
      expect(() => new RedisEventBus({ ...base, prefix: 'has{brace' })).toThrow(RangeError);
      const prefixed = connections.connect({ keyPrefix: 'elsewhere:' });
      expect(() => new RedisEventBus({ ...base, redis: prefixed })).toThrow('keyPrefix');
    });
  });
});
