import type { LivePresence } from '../ports';
import { describeLiveRegistryContract } from '../testing';
import { InProcessLiveRegistry } from './in-process-live-registry';

describeLiveRegistryContract('in-process', () => {
  const registry = new InProcessLiveRegistry();
  return Promise.resolve({ registry, cleanup: () => registry.close() });
});

const presence = (id: string, instance: string, patch: Partial<LivePresence> = {}): LivePresence => ({
  tenantId: 't',
  id,
  title: null,
  status: 'idle',
  userId: null,
  instance,
  controllers: 1,
  observers: 0,
  worker: null,
  ...patch,
});

describe('InProcessLiveRegistry', () => {
  it('stamps since with the injected clock', async () => {
    const registry = new InProcessLiveRegistry({ now: () => Date.UTC(2030, 0, 2, 3, 4, 5, 6) });
    await registry.upsert(presence('s1', 'api-1'));
    expect((await registry.get('t', 's1'))?.since).toBe('2030-01-02T03:04:05.006Z');
  });

  it('orders sessions that became live in the same millisecond by arrival, newest first', async () => {
    const registry = new InProcessLiveRegistry({ now: () => 1_000 });
    for (const id of ['a', 'b', 'c']) await registry.upsert(presence(id, 'api-1'));
    await registry.upsert(presence('a', 'api-2'));
    expect((await registry.list('t')).map((e) => e.id)).toEqual(['c', 'b', 'a']);
  });

  it('takes the newest non-null worker when two presences name one', async () => {
    const registry = new InProcessLiveRegistry();
    await registry.upsert(presence('s1', 'api-1', { worker: 'w-old' }));
    await registry.upsert(presence('s1', 'api-2', { worker: 'w-new' }));
    await registry.upsert(presence('s1', 'api-3', { worker: null }));
    expect((await registry.get('t', 's1'))?.where.worker).toBe('w-new');
  });

  it('does not change when the caller later mutates the presence it upserted', async () => {
    const registry = new InProcessLiveRegistry();
    const mine = presence('s1', 'api-1', { controllers: 2 });
    await registry.upsert(mine);
    mine.controllers = 99;
    expect((await registry.get('t', 's1'))?.controllers).toBe(2);
  });
});
