// The ActivityFeed contract as a jest suite, run unchanged against every adapter: a tenant's subscribers get
// that tenant's activity only, the all-tenants view (null) gets everyone's, in publish order.

import type { ActivityEvent } from '@canopy/core';

import type { ActivityFeed, Unsubscribe } from '../ports';
import { jestApi } from './jest-api';
import { uniqueId, waitFor } from './wait';

export interface ActivityFeedFixture {
  feed: ActivityFeed;
  cleanup(): Promise<void>;
}

export function describeActivityFeedContract(name: string, make: () => Promise<ActivityFeedFixture>): void {
  const { describe, it, expect, beforeEach, afterEach } = jestApi();

  describe(`ActivityFeed contract: ${name}`, () => {
    let fixture: ActivityFeedFixture;
    let feed: ActivityFeed;
    let tenantA: string;
    let tenantB: string;
    const unsubscribes: Unsubscribe[] = [];

    async function record(tenantId: string | null) {
      const events: ActivityEvent[] = [];
      const unsubscribe = await feed.subscribe(tenantId, (event) => events.push(event));
      unsubscribes.push(unsubscribe);
      return { events, unsubscribe };
    }

    /** Only this test's tenants: other suites may share an adapter's store. */
    function ours(events: ActivityEvent[]): ActivityEvent[] {
      return events.filter((e) => e.tenantId === tenantA || e.tenantId === tenantB);
    }

    let counter = 0;
    function titled(tenantId: string): ActivityEvent {
      counter += 1;
      return {
        tenantId,
        type: 'title',
        data: { id: `s-${counter}`, title: `title ${counter}` },
        at: counter,
      };
    }

    beforeEach(async () => {
      fixture = await make();
      feed = fixture.feed;
      tenantA = uniqueId('tenant-a');
      tenantB = uniqueId('tenant-b');
    });

    afterEach(async () => {
      for (const unsubscribe of unsubscribes.splice(0)) await unsubscribe();
      await fixture.cleanup();
    });

    it("delivers a tenant's events, in order, to that tenant's subscribers only", async () => {
      const a = await record(tenantA);
      const b = await record(tenantB);
      const events = [titled(tenantA), titled(tenantB), titled(tenantA), titled(tenantA), titled(tenantB)];
      for (const event of events) await feed.publish(event);

      await waitFor('both tenants', () => a.events.length >= 3 && b.events.length >= 2);
      const marker = titled(tenantA);
      await feed.publish(marker);
      await waitFor('the marker', () => a.events.length >= 4);

      expect(a.events).toEqual([...events.filter((e) => e.tenantId === tenantA), marker]);
      expect(b.events).toEqual(events.filter((e) => e.tenantId === tenantB));
    });

    it("gives the all-tenants view every tenant's events in publish order", async () => {
      const all = await record(null);
      const events: ActivityEvent[] = [
        {
          tenantId: tenantA,
          type: 'opened',
          data: { id: 's1', title: null, status: 'idle', userId: 'u1' },
          at: 1,
        },
        { tenantId: tenantB, type: 'status', data: { id: 's2', status: 'busy' }, at: 2 },
        { tenantId: tenantA, type: 'run_started', data: { id: 's1', runId: 'r1', kind: 'prompt' }, at: 3 },
        { tenantId: tenantB, type: 'closed', data: { id: 's2', reason: 'idle' }, at: 4 },
      ];
      for (const event of events) await feed.publish(event);

      await waitFor('every event', () => ours(all.events).length >= events.length);
      expect(ours(all.events)).toEqual(events);
    });

    it('delivers only events published after subscribe resolved', async () => {
      // A witness subscribed before the early event sees it arrive first. On a Redis Cluster a PUBLISH returns once
      // its own node has delivered it and reaches the other nodes over the cluster bus later: a subscription made
      // meanwhile on another node would still get it. "Published" here is "delivered to those already listening".
      const witness = await record(tenantA);
      const early = titled(tenantA);
      await feed.publish(early);
      await waitFor('the early event', () => witness.events.length >= 1);
      const a = await record(tenantA);
      const all = await record(null);

      const late = titled(tenantA);
      await feed.publish(late);
      await waitFor('the late event', () => a.events.length >= 1 && ours(all.events).length >= 1);
      expect(a.events).toEqual([late]);
      expect(ours(all.events)).toEqual([late]);
    });

    it('delivers to every subscriber, and stops once its unsubscribe resolved', async () => {
      const leaving = await record(tenantA);
      const staying = await record(tenantA);
      const leavingAll = await record(null);
      const first = titled(tenantA);
      await feed.publish(first);
      await waitFor('the first event', () => leaving.events.length >= 1 && staying.events.length >= 1);
      await waitFor('the first event (all tenants)', () => ours(leavingAll.events).length >= 1);

      await leaving.unsubscribe();
      await leavingAll.unsubscribe();
      const second = titled(tenantA);
      await feed.publish(second);
      await waitFor('the remaining subscriber', () => staying.events.length >= 2);

      expect(leaving.events).toEqual([first]);
      expect(ours(leavingAll.events)).toEqual([first]);
      expect(staying.events).toEqual([first, second]);
    });

    it('keeps delivering to the others and the publisher when a listener throws', async () => {
      unsubscribes.push(
        await feed.subscribe(tenantA, () => {
          throw new Error('listener failure (expected by the test)');
        }),
      );
      unsubscribes.push(
        await feed.subscribe(null, () => {
          throw new Error('listener failure (expected by the test)');
        }),
      );
      const healthy = await record(tenantA);
      const events = [titled(tenantA), titled(tenantA)];
      for (const event of events) await expect(feed.publish(event)).resolves.toBeUndefined();

      await waitFor('the healthy subscriber', () => healthy.events.length >= 2);
      expect(healthy.events).toEqual(events);
    });
  });
}
