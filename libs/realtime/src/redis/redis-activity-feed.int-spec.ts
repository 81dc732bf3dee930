import { randomUUID } from 'node:crypto';

import type { ActivityEvent, SessionEvent } from '@canopy/core';
import type { Redis } from 'ioredis';

import type { Unsubscribe } from '../ports';
import { describeActivityFeedContract, waitFor } from '../testing';
import { uniqueId } from '../testing/wait';
import { RedisActivityFeed, type RedisActivityFeedOptions } from './redis-activity-feed';
import { RedisEventBus } from './redis-event-bus';
import { deleteKeys, killPubSubConnection, testPrefix, TestConnections } from './redis-test-support';

const PREFIX = testPrefix('redis-activity-feed');
const connections = new TestConnections();
let admin: Redis;

beforeAll(() => {
  admin = connections.connect();
});

afterAll(async () => {
  await deleteKeys(admin, PREFIX);
  await connections.closeAll();
});

describeActivityFeedContract('redis', () => {
  const redis = connections.connect();
  const feed = new RedisActivityFeed({ redis, prefix: PREFIX, onListenerError: () => {} });
  return Promise.resolve({
    feed,
    cleanup: async () => {
      await feed.close();
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

describe('RedisActivityFeed', () => {
  const feeds: RedisActivityFeed[] = [];
  const unsubscribes: Unsubscribe[] = [];
  let tenantA: string;
  let tenantB: string;

  /** An "api instance": its own connections and feed over the shared Redis. */
  function instance(options: Partial<RedisActivityFeedOptions> = {}): RedisActivityFeed {
    const feed = new RedisActivityFeed({
      redis: connections.connect(),
      prefix: PREFIX,
      onListenerError: () => {},
      ...options,
    });
    feeds.push(feed);
    return feed;
  }

  async function record(feed: RedisActivityFeed, tenantId: string | null): Promise<ActivityEvent[]> {
    const events: ActivityEvent[] = [];
    unsubscribes.push(await feed.subscribe(tenantId, (event) => events.push(event)));
    return events;
  }

  const ours = (events: ActivityEvent[]) =>
    events.filter((e) => e.tenantId === tenantA || e.tenantId === tenantB);

  let counter = 0;
  function status(tenantId: string): ActivityEvent {
    counter += 1;
    return { tenantId, type: 'status', data: { id: `s-${counter}`, status: 'busy' }, at: counter };
  }

  beforeEach(() => {
    tenantA = uniqueId('tenant-a');
    tenantB = uniqueId('tenant-b');
  });

  afterEach(async () => {
    for (const unsubscribe of unsubscribes.splice(0)) await unsubscribe();
    for (const feed of feeds.splice(0)) await feed.close();
  });

  it('filters by tenant and shows every tenant in publish order across instances', async () => {
    const a = instance();
    const b = instance();
    const dashboard = instance();
    const onlyA = await record(dashboard, tenantA);
    const onlyB = await record(a, tenantB);
    const all = await record(dashboard, null);

    const events = [status(tenantA), status(tenantB), status(tenantB), status(tenantA), status(tenantA)];
    for (const [i, event] of events.entries()) await (i % 2 === 0 ? a : b).publish(event);

    await waitFor('every view', () => onlyA.length >= 3 && onlyB.length >= 2 && ours(all).length >= 5);
    const marker = status(tenantA);
    await b.publish(marker);
    await waitFor('the marker', () => onlyA.length >= 4 && ours(all).length >= 6);

    expect(onlyA).toEqual([...events.filter((e) => e.tenantId === tenantA), marker]);
    expect(onlyB).toEqual(events.filter((e) => e.tenantId === tenantB));
    expect(ours(all)).toEqual([...events, marker]);
  });

  it('matches the all-tenants pattern literally, so a prefix with glob characters sees only its own feed', async () => {
    const globby = instance({ prefix: `${PREFIX}:x*` });
    const neighbour = instance({ prefix: `${PREFIX}:xy` });
    const all = await record(globby, null);

    await neighbour.publish(status(tenantA));
    const mine = status(tenantA);
    await globby.publish(mine);
    await waitFor('its own event', () => all.length >= 1);
    const marker = status(tenantB);
    await globby.publish(marker);
    await waitFor('the marker', () => all.length >= 2);
    expect(all).toEqual([mine, marker]);
  });

  it('resubscribes both views after its subscriber connection drops', async () => {
    const name = `canopy-test-feed-subscriber-${randomUUID()}`;
    const publisher = instance();
    const feed = instance({ subscriber: connections.connect({ connectionName: name }) });
    const tenant = await record(feed, tenantA);
    const all = await record(feed, null);
    const first = status(tenantA);
    await publisher.publish(first);
    await waitFor('the first event', () => tenant.length >= 1 && ours(all).length >= 1);

    await killPubSubConnection(admin, name);
    await until('the subscriptions to be back', async () => {
      const clients = (await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
      const line = clients.split('\n').find((l) => l.includes(` name=${name} `)) ?? '';
      return / sub=1 /.test(line) && / psub=1 /.test(line);
    });
    const second = status(tenantA);
    await publisher.publish(second);
    await waitFor('the event after the reconnect', () => tenant.length >= 2 && ours(all).length >= 2);

    expect(tenant).toEqual([first, second]);
    expect(ours(all)).toEqual([first, second]);
  });

  it('reports a throwing listener to onListenerError', async () => {
    const errors: unknown[] = [];
    const feed = instance({ onListenerError: (error) => errors.push(error) });
    const failure = new Error('listener failure (expected by the test)');
    unsubscribes.push(
      await feed.subscribe(tenantA, () => {
        throw failure;
      }),
    );
    const healthy = await record(feed, tenantA);
    await feed.publish(status(tenantA));
    await waitFor('the healthy listener', () => healthy.length >= 1);
    expect(errors).toEqual([failure]);
  });

  it('shares a subscriber connection with an event bus, each keeping its own subscriptions', async () => {
    const subscriber = connections.connect();
    const redis = connections.connect();
    const feed = instance({ redis, subscriber });
    const bus = new RedisEventBus({
      redis,
      subscriber,
      prefix: PREFIX,
      replayLimit: 5,
      replayTtlSeconds: 60,
    });
    const session = uniqueId('session');
    const events: SessionEvent[] = [];
    const leaveBus = await bus.subscribe(tenantA, session, (e) => events.push(e));
    const activity = await record(feed, tenantA);

    const published = await bus.publish(tenantA, session, [{ type: 'title', data: { title: 'Trip' } }]);
    const event = status(tenantA);
    await feed.publish(event);
    await waitFor('both', () => events.length >= 1 && activity.length >= 1);
    await leaveBus();
    await bus.close();

    const later = status(tenantA);
    await feed.publish(later);
    await waitFor('the feed after the bus closed', () => activity.length >= 2);
    expect(events).toEqual(published);
    expect(activity).toEqual([event, later]);
  });

  it('refuses work once closed', async () => {
    const feed = instance();
    await feed.close();
    await expect(feed.publish(status(tenantA))).rejects.toThrow('closed');
    await expect(feed.subscribe(null, () => {})).rejects.toThrow('closed');
  });
});
