import type { ThrottlerStorage } from '@nestjs/throttler';
import { FALLBACK_RETRY_MS, FallbackThrottlerStorage } from './fallback-throttler-storage';

type Rec = Awaited<ReturnType<ThrottlerStorage['increment']>>;

function primary(behaviour: () => Promise<Rec>) {
  const calls: string[] = [];
  return {
    calls,
    storage: {
      increment: (key: string) => {
        calls.push(key);
        return behaviour();
      },
    },
  };
}

const record = (totalHits: number): Rec => ({
  totalHits,
  timeToExpire: 60,
  isBlocked: false,
  timeToBlockExpire: 0,
});

describe('FallbackThrottlerStorage', () => {
  let now = 1_000_000;
  const clock = () => now;
  let storage: FallbackThrottlerStorage | undefined;
  afterEach(() => storage?.onApplicationShutdown());

  it('counts in Redis while it answers', async () => {
    const p = primary(() => Promise.resolve(record(7)));
    storage = new FallbackThrottlerStorage(p.storage, clock);
    expect((await storage.increment('k', 60_000, 10, 0, 'credential')).totalHits).toBe(7);
    expect(storage.degraded).toBe(false);
  });

  it('counts in this process when Redis fails, still limiting, and tries Redis again later', async () => {
    let up = false;
    const p = primary(() =>
      up ? Promise.resolve(record(1)) : Promise.reject(new Error('Command timed out')),
    );
    storage = new FallbackThrottlerStorage(p.storage, clock);
    const first = await storage.increment('k', 60_000, 2, 0, 'credential');
    expect(first.totalHits).toBe(1);
    expect(storage.degraded).toBe(true);
    await storage.increment('k', 60_000, 2, 0, 'credential');
    const third = await storage.increment('k', 60_000, 2, 0, 'credential');
    expect(third.isBlocked).toBe(true); // over the limit: the local count still limits
    expect(p.calls).toHaveLength(1); // Redis is not asked again while degraded
    up = true;
    now += FALLBACK_RETRY_MS + 1;
    expect((await storage.increment('k', 60_000, 2, 0, 'credential')).totalHits).toBe(1);
    expect(storage.degraded).toBe(false);
  });

  it('does not wait for a Redis that never answers', async () => {
    const p = primary(() => new Promise<Rec>(() => undefined));
    storage = new FallbackThrottlerStorage(p.storage, clock, 20);
    expect((await storage.increment('k', 60_000, 10, 0, 'credential')).totalHits).toBe(1);
    expect(storage.degraded).toBe(true);
  });
});
