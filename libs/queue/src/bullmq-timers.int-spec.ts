import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { commandsDuring, PrivateRedis } from '@canopy/testing';
import { Redis } from 'ioredis';
import { BullmqTimers } from './bullmq-timers';
import { timerKey } from './timer-jobs';
import { describeTimersContract } from './testing/timers.contract';

const REDIS_URL = 'redis://127.0.0.1:6379';

async function dropKeys(redis: Redis, prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
}

describeTimersContract(
  'BullMQ',
  async () => {
    const prefix = `ttest${randomBytes(4).toString('hex')}`;
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    await connection.ping();
    const timers = new BullmqTimers({ connection, prefix });
    return {
      timers,
      async cleanup() {
        await timers.close();
        await dropKeys(connection, prefix);
        await connection.quit();
      },
    };
  },
  { describe, it, expect },
);

describe('BullmqTimers: commands per set (a private Redis, so INFO counts only these)', () => {
  let server: PrivateRedis;
  let connection: Redis;
  let timers: BullmqTimers;

  beforeAll(async () => {
    server = await PrivateRedis.start();
    connection = new Redis(server.url, { maxRetriesPerRequest: null });
    timers = new BullmqTimers({ connection, prefix: 'counts' });
  }, 30_000);

  afterAll(async () => {
    await timers?.close();
    await connection?.quit();
    await server?.down();
  }, 30_000);

  /** Every command Redis ran while `work` ran (scripts' own included). */
  async function commandsOf(work: () => Promise<unknown>): Promise<number> {
    const calls = await commandsDuring(connection, work);
    return Object.values(calls).reduce((sum, n) => sum + n, 0);
  }

  it('moves a pending timer with one script of about ten commands, not a remove and an add', async () => {
    const timer = { kind: 'session-idle', tenantId: randomUUID(), sessionId: 's' } as const;
    const first = await commandsOf(() => timers.set(timer, 60_000));
    const again = await commandsOf(() => timers.set(timer, 60_000));
    expect(again).toBeLessThanOrEqual(12);
    expect(again).toBeLessThan(first);
    const job = await timers['queue'].getJob(timerKey(timer));
    expect(job ? await job.getState() : null).toBe('delayed');
  });
});
