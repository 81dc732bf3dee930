import { ThrottlerStorageService } from '@nestjs/throttler';
import { SWEEP_INTERVAL_MS, WindowThrottlerStorage } from './window-throttler-storage';

const MINUTE = 60_000;

describe('WindowThrottlerStorage', () => {
  let now = 1_000_000;
  const clock = () => now;
  beforeEach(() => (now = 1_000_000));

  it('counts hits per key and budget within a window, then starts a new window', async () => {
    const s = new WindowThrottlerStorage(clock);
    expect(await s.increment('k', MINUTE, 3, MINUTE, 'credential')).toEqual({
      totalHits: 1,
      timeToExpire: 60,
      isBlocked: false,
      timeToBlockExpire: 0,
    });
    now += 10_000;
    expect((await s.increment('k', MINUTE, 3, MINUTE, 'credential')).totalHits).toBe(2);
    // Another budget and another key count apart.
    expect((await s.increment('k', MINUTE, 3, MINUTE, 'tenant')).totalHits).toBe(1);
    expect((await s.increment('other', MINUTE, 3, MINUTE, 'credential')).totalHits).toBe(1);
    const third = await s.increment('k', MINUTE, 3, MINUTE, 'credential');
    expect(third).toMatchObject({ totalHits: 3, timeToExpire: 50, isBlocked: false });
    // The window was opened by the first hit: it ends 60 s after it, and counting restarts.
    now += 50_000;
    expect(await s.increment('k', MINUTE, 3, MINUTE, 'credential')).toMatchObject({
      totalHits: 1,
      timeToExpire: 60,
      isBlocked: false,
    });
  });

  it('blocks past the limit for the block duration, as the Redis storage does', async () => {
    const s = new WindowThrottlerStorage(clock);
    for (let i = 0; i < 2; i++) await s.increment('k', MINUTE, 2, 30_000, 'credential');
    expect(await s.increment('k', MINUTE, 2, 30_000, 'credential')).toEqual({
      totalHits: 3,
      timeToExpire: 60,
      isBlocked: true,
      timeToBlockExpire: 30,
    });
    now += 20_000;
    expect(await s.increment('k', MINUTE, 2, 30_000, 'credential')).toMatchObject({
      isBlocked: true,
      timeToBlockExpire: 10,
    });
    // The block ended but the window's count is still past the limit: blocked again.
    now += 15_000;
    expect(await s.increment('k', MINUTE, 2, 30_000, 'credential')).toMatchObject({
      totalHits: 5,
      isBlocked: true,
      timeToBlockExpire: 30,
    });
    // A new window (and the block over): let through.
    now += 30_000;
    expect(await s.increment('k', MINUTE, 2, 30_000, 'credential')).toMatchObject({
      totalHits: 1,
      isBlocked: false,
      timeToBlockExpire: 0,
    });
  });

  it('without a block duration, refuses past the limit until the window ends', async () => {
    const s = new WindowThrottlerStorage(clock);
    await s.increment('k', MINUTE, 1, 0, 'credential');
    now += 45_000;
    expect(await s.increment('k', MINUTE, 1, 0, 'credential')).toMatchObject({
      isBlocked: true,
      timeToBlockExpire: 15,
    });
    now += 15_000;
    expect((await s.increment('k', MINUTE, 1, 0, 'credential')).isBlocked).toBe(false);
  });

  it('drops ended windows of idle keys', async () => {
    const s = new WindowThrottlerStorage(clock);
    for (let i = 0; i < 100; i++) await s.increment(`idle-${i}`, MINUTE, 10, MINUTE, 'credential');
    expect(s.size).toBe(100);
    now += SWEEP_INTERVAL_MS;
    await s.increment('busy', MINUTE, 10, MINUTE, 'credential');
    expect(s.size).toBe(1);
  });

  it('keeps one count per key whatever the rate, where the throttler package keeps (and filters) every hit', async () => {
    const hits = 20_000;
    const ours = new WindowThrottlerStorage(clock);
    for (let i = 0; i < hits; i++) await ours.increment('k', MINUTE, 1_000_000, MINUTE, 'credential');
    expect((await ours.increment('k', MINUTE, 1_000_000, MINUTE, 'credential')).totalHits).toBe(hits + 1);
    expect(ours.size).toBe(1);

    const theirs = new ThrottlerStorageService();
    try {
      for (let i = 0; i < 2_000; i++) await theirs.increment('k', MINUTE, 1_000_000, MINUTE, 'credential');
      const kept = (
        theirs as unknown as { hitExpirations: Map<string, Map<string, number[]>> }
      ).hitExpirations
        .get('k')!
        .get('credential')!;
      // One expiry per hit, each filtered again by every later increment of the key.
      expect(kept).toHaveLength(2_000);
    } finally {
      theirs.onApplicationShutdown();
    }
  });
});
