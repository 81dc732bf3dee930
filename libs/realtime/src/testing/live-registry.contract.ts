// The LiveRegistry contract as a jest suite, run unchanged against every adapter: presences per instance,
// merged into one entry per live session (sums, sorted instances, the latest presence's description, `since`
// of the first presence), tenant-scoped and all-tenants listings newest first.

import type { LiveEntry, LivePresence, LiveRegistry } from '../ports';
import { jestApi } from './jest-api';
import { clockPast, uniqueId } from './wait';

export interface LiveRegistryFixture {
  registry: LiveRegistry;
  cleanup(): Promise<void>;
}

export function describeLiveRegistryContract(name: string, make: () => Promise<LiveRegistryFixture>): void {
  const { describe, it, expect, beforeEach, afterEach } = jestApi();

  describe(`LiveRegistry contract: ${name}`, () => {
    let fixture: LiveRegistryFixture;
    let registry: LiveRegistry;
    let tenant: string;

    function presence(id: string, instance: string, patch: Partial<LivePresence> = {}): LivePresence {
      return {
        tenantId: tenant,
        id,
        title: null,
        status: 'idle',
        userId: null,
        instance,
        controllers: 1,
        observers: 0,
        worker: null,
        ...patch,
      };
    }

    /** Reads an entry that must exist. */
    async function entry(id: string, tenantId = tenant): Promise<LiveEntry> {
      const found = await registry.get(tenantId, id);
      if (!found) throw new Error(`expected session ${id} to be live`);
      return found;
    }

    /** Upserts after the clock has moved past `since`, so the new entry is strictly newer. */
    async function upsertLater(since: string, value: LivePresence): Promise<void> {
      await clockPast(Date.parse(since));
      await registry.upsert(value);
    }

    beforeEach(async () => {
      fixture = await make();
      registry = fixture.registry;
      tenant = uniqueId('tenant');
    });

    afterEach(() => fixture.cleanup());

    it('knows nothing of a session no instance serves', async () => {
      expect(await registry.get(tenant, 'nope')).toBeNull();
      expect(await registry.list(tenant)).toEqual([]);
    });

    it('shows one presence as the entry', async () => {
      const before = Date.now();
      await registry.upsert(
        presence('s1', 'api-1', {
          title: 'Trip',
          status: 'busy',
          userId: 'u1',
          controllers: 2,
          observers: 3,
          worker: 'worker-1',
        }),
      );

      const live = await entry('s1');
      expect(live).toEqual({
        tenantId: tenant,
        id: 's1',
        title: 'Trip',
        status: 'busy',
        userId: 'u1',
        controllers: 2,
        observers: 3,
        since: live.since,
        where: { api: ['api-1'], worker: 'worker-1' },
      });
      expect(new Date(live.since).toISOString()).toBe(live.since);
      expect(Date.parse(live.since)).toBeGreaterThanOrEqual(before - 1_000);
      expect(Date.parse(live.since)).toBeLessThanOrEqual(Date.now() + 1_000);
    });

    it('merges the presences of several instances', async () => {
      await registry.upsert(
        presence('s1', 'api-b', { controllers: 1, observers: 2, worker: null, title: 'old', userId: 'u1' }),
      );
      await registry.upsert(
        presence('s1', 'api-a', {
          controllers: 2,
          observers: 5,
          worker: 'worker-7',
          title: 'new',
          status: 'busy',
          userId: 'u2',
        }),
      );
      await registry.upsert(presence('s1', 'api-c', { controllers: 0, observers: 1, title: 'newest' }));

      const live = await entry('s1');
      expect(live.controllers).toBe(3);
      expect(live.observers).toBe(8);
      expect(live.where).toEqual({ api: ['api-a', 'api-b', 'api-c'], worker: 'worker-7' });
      // The most recently upserted presence describes the session.
      expect({ title: live.title, status: live.status, userId: live.userId }).toEqual({
        title: 'newest',
        status: 'idle',
        userId: null,
      });
    });

    it('replaces an instance presence on upsert instead of adding to it, keeping since', async () => {
      await registry.upsert(presence('s1', 'api-1', { controllers: 1, observers: 1 }));
      const first = await entry('s1');

      await upsertLater(
        first.since,
        presence('s1', 'api-1', {
          controllers: 4,
          observers: 0,
          status: 'busy',
          title: 'Renamed',
          worker: 'w',
        }),
      );
      const second = await entry('s1');
      expect(second).toEqual({
        ...first,
        title: 'Renamed',
        status: 'busy',
        controllers: 4,
        observers: 0,
        where: { api: ['api-1'], worker: 'w' },
      });
      expect(second.since).toBe(first.since);
    });

    it('keeps since of the first presence while any instance still serves the session', async () => {
      await registry.upsert(presence('s1', 'api-1'));
      const { since } = await entry('s1');

      await upsertLater(since, presence('s1', 'api-2'));
      expect((await entry('s1')).since).toBe(since);

      await registry.remove(tenant, 's1', 'api-1');
      const rest = await entry('s1');
      expect(rest.since).toBe(since);
      expect(rest.where.api).toEqual(['api-2']);
    });

    it('drops a removed presence from the merge and falls back to the remaining ones', async () => {
      await registry.upsert(
        presence('s1', 'api-1', { controllers: 1, observers: 2, title: 'one', worker: 'w1' }),
      );
      await registry.upsert(
        presence('s1', 'api-2', { controllers: 3, observers: 4, title: 'two', worker: null }),
      );

      await registry.remove(tenant, 's1', 'api-2');
      const live = await entry('s1');
      expect(live.controllers).toBe(1);
      expect(live.observers).toBe(2);
      expect(live.title).toBe('one');
      expect(live.where).toEqual({ api: ['api-1'], worker: 'w1' });
    });

    it('reports no worker when no presence names one', async () => {
      await registry.upsert(presence('s1', 'api-1'));
      await registry.upsert(presence('s1', 'api-2'));
      expect((await entry('s1')).where.worker).toBeNull();
    });

    it('names a worker-only presence as the worker, not among the apis serving the session', async () => {
      await registry.upsert(presence('s1', 'api-1'));
      await registry.upsert(
        presence('s1', 'worker-1', { role: 'worker', worker: 'worker-1', controllers: 0, status: 'busy' }),
      );
      const live = await entry('s1');
      expect(live.where).toEqual({ api: ['api-1'], worker: 'worker-1' });
      expect(live.controllers).toBe(1);
      await registry.remove(tenant, 's1', 'worker-1');
      expect((await entry('s1')).where).toEqual({ api: ['api-1'], worker: null });
    });

    it('says which upsert made a session live and which remove ended it, once each across instances', async () => {
      expect(await registry.upsert(presence('s1', 'api-1'))).toEqual({ created: true });
      expect(await registry.upsert(presence('s1', 'api-1', { observers: 3 }))).toEqual({ created: false });
      expect(await registry.upsert(presence('s1', 'api-2'))).toEqual({ created: false });
      expect(await registry.upsert(presence('s2', 'api-2'))).toEqual({ created: true });
      expect(await registry.remove(tenant, 's1', 'unknown-instance')).toEqual({ gone: false });
      expect(await registry.remove(tenant, 's1', 'api-1')).toEqual({ gone: false });
      const last = await Promise.all([
        registry.remove(tenant, 's1', 'api-2'),
        registry.remove(tenant, 's1', 'api-2'),
      ]);
      expect(last.map((r) => r.gone).sort()).toEqual([false, true]);
      expect(await registry.remove(tenant, 's1', 'api-2')).toEqual({ gone: false });
      expect(await registry.upsert(presence('s1', 'api-2'))).toEqual({ created: true });
    });

    it('removes the entry with its last presence, and a later upsert starts a new since', async () => {
      await registry.upsert(presence('s1', 'api-1'));
      const { since } = await entry('s1');
      await registry.remove(tenant, 's1', 'unknown-instance');
      expect(await registry.get(tenant, 's1')).not.toBeNull();

      await registry.remove(tenant, 's1', 'api-1');
      expect(await registry.get(tenant, 's1')).toBeNull();
      expect(await registry.list(tenant)).toEqual([]);
      await registry.remove(tenant, 's1', 'api-1'); // removing again is harmless

      await upsertLater(since, presence('s1', 'api-1'));
      expect(Date.parse((await entry('s1')).since)).toBeGreaterThan(Date.parse(since));
    });

    it("lists a tenant's live sessions newest first", async () => {
      await registry.upsert(presence('s-old', 'api-1'));
      await upsertLater((await entry('s-old')).since, presence('s-mid', 'api-1'));
      await upsertLater((await entry('s-mid')).since, presence('s-new', 'api-2'));
      // A new presence of the oldest session does not make it newer.
      await registry.upsert(presence('s-old', 'api-2'));

      const listed = await registry.list(tenant);
      expect(listed.map((e) => e.id)).toEqual(['s-new', 's-mid', 's-old']);
      expect(listed).toEqual([await entry('s-new'), await entry('s-mid'), await entry('s-old')]);
    });

    it('keeps tenants apart, and lists every tenant for null', async () => {
      const other = uniqueId('tenant');
      await registry.upsert(presence('same-id', 'api-1', { title: 'mine', controllers: 1 }));
      const mine = await entry('same-id');
      await upsertLater(mine.since, {
        ...presence('same-id', 'api-1', { title: 'theirs' }),
        tenantId: other,
      });
      const theirs = await entry('same-id', other);

      expect(theirs.tenantId).toBe(other);
      expect(theirs.title).toBe('theirs');
      expect((await entry('same-id')).title).toBe('mine');
      expect(await registry.list(tenant)).toEqual([mine]);
      expect(await registry.list(other)).toEqual([theirs]);

      // Other suites may share the store: only this test's tenants are checked, in their relative order.
      const all = (await registry.list(null)).filter((e) => e.tenantId === tenant || e.tenantId === other);
      expect(all).toEqual([theirs, mine]);

      await registry.remove(other, 'same-id', 'api-1');
      expect(await registry.get(other, 'same-id')).toBeNull();
      expect(await registry.get(tenant, 'same-id')).toEqual(mine);
    });
  });
}
