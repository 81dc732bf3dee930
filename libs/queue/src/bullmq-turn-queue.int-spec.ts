import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { BullmqTurnQueue } from './bullmq-turn-queue';
import { JOBS } from './job-catalog';
import { describeTurnQueueContract } from './testing/turn-queue.contract';

const REDIS_URL = 'redis://127.0.0.1:6379';

describeTurnQueueContract(
  'BullMQ',
  async () => {
    const prefix = `qtest${randomBytes(4).toString('hex')}`;
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    await connection.ping();
    const queue = new BullmqTurnQueue({ connection, prefix, concurrency: 4, lockDurationMs: 2_000 });
    return {
      queue,
      async cleanup() {
        await queue.close(2_000);
        const keys = await connection.keys(`${prefix}:*`);
        if (keys.length) await connection.del(...keys);
        await connection.quit();
      },
    };
  },
  { attempts: JOBS.run.attempts, runsInline: false },
  { describe, it, expect },
);
