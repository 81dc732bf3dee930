import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { BullmqTimers } from './bullmq-timers';
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
