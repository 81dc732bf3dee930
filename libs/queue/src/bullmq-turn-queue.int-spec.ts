import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { BullmqTurnQueue } from './bullmq-turn-queue';
import { JOBS } from './job-catalog';
import { RunHandedBack } from './turn-queue.port';
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

describe('BullMQ turn queue: graceful close', () => {
  it('lets a run finish within the grace period, hands one back past it, and another worker takes it at once', async () => {
    const prefix = `qtest${randomBytes(4).toString('hex')}`;
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    // A long lock: a run taken over only after the lock lapsed would show up as a slow takeover.
    const options = { connection, prefix, concurrency: 4, lockDurationMs: 10_000 };
    const stopping = new BullmqTurnQueue(options);
    const other = new BullmqTurnQueue(options);
    const aborts = new Map<string, AbortController>();
    const log: string[] = [];
    const givenUp: string[] = [];
    stopping.process(
      async (job) => {
        log.push(`stopping took ${job.sessionId}`);
        const abort = new AbortController();
        aborts.set(job.runId, abort);
        const ms = job.sessionId === 'short' ? 300 : 30_000;
        await new Promise<void>((resolve, reject) => {
          const t = setTimeout(resolve, ms);
          abort.signal.addEventListener('abort', () => {
            clearTimeout(t);
            reject(new RunHandedBack(job.runId));
          });
        });
        log.push(`stopping finished ${job.sessionId}`);
      },
      (job) => {
        givenUp.push(job.runId);
        return Promise.resolve();
      },
    );
    const short = { tenantId: randomUUID(), sessionId: 'short', runId: randomUUID() };
    const long = { tenantId: randomUUID(), sessionId: 'long', runId: randomUUID() };
    try {
      await stopping.enqueue(short);
      await stopping.enqueue(long);
      await until(() => aborts.size === 2);
      // Only now does the other worker start: both runs are held by the stopping one.
      other.process(
        async (job) => {
          log.push(`other took ${job.sessionId}`);
          await Promise.resolve();
        },
        () => Promise.resolve(),
      );
      const closedAt = Date.now();
      await stopping.close(1_000, async () => {
        log.push('hand back');
        for (const a of aborts.values()) a.abort();
        await Promise.resolve();
      });
      await until(() => log.includes('other took long'));
      expect(Date.now() - closedAt).toBeLessThan(5_000);
      expect(log).toEqual([
        'stopping took short',
        'stopping took long',
        'stopping finished short',
        'hand back',
        'other took long',
      ]);
      expect(givenUp).toEqual([]);
    } finally {
      await other.close(1_000);
      const keys = await connection.keys(`${prefix}:*`);
      if (keys.length) await connection.del(...keys);
      await connection.quit();
    }
  }, 20_000);
});

describe('BullMQ turn queue: jobs it ended', () => {
  it('says how it ended a job, and queues a run again over an ended job only when told to replace it', async () => {
    const prefix = `qtest${randomBytes(4).toString('hex')}`;
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const failing = new BullmqTurnQueue({ connection, prefix, concurrency: 4, lockDurationMs: 2_000 });
    const failed = { tenantId: randomUUID(), sessionId: 'failed', runId: randomUUID() };
    const done = { tenantId: randomUUID(), sessionId: 'done', runId: randomUUID() };
    let next: BullmqTurnQueue | null = null;
    try {
      // A worker whose every attempt fails, and which does not end the run when the queue gives up on it (as one
      // that died right after failing the job would not).
      const finals: string[] = [];
      failing.process(
        (job) => (job.sessionId === 'failed' ? Promise.reject(new Error('boom')) : Promise.resolve()),
        (job) => {
          finals.push(job.runId);
          return Promise.resolve();
        },
      );
      expect(await failing.endedJob(failed)).toBe(null); // no job yet
      await failing.enqueue(failed);
      await failing.enqueue(done);
      await until(() => finals.length === 1, 20_000); // attempts 1 s and 2 s apart
      await until(async () => (await failing.endedJob(done)) === 'completed');
      expect(await failing.endedJob(failed)).toBe('failed');
      await failing.close(1_000);

      const taken: string[] = [];
      next = new BullmqTurnQueue({ connection, prefix, concurrency: 4, lockDurationMs: 2_000 });
      next.process(
        (job) => {
          taken.push(job.sessionId);
          return Promise.resolve();
        },
        () => Promise.resolve(),
      );
      // A plain enqueue of an id BullMQ still keeps is ignored...
      await next.enqueue(failed);
      await next.enqueue(done);
      await new Promise((r) => setTimeout(r, 500));
      expect(taken).toEqual([]);
      // ... replacing the ended job queues it again.
      await next.enqueue(failed, { replaceEnded: true });
      await next.enqueue(done, { replaceEnded: true });
      await until(() => taken.length === 2);
      expect([...taken].sort()).toEqual(['done', 'failed']);
      await until(async () => (await next!.endedJob(failed)) === 'completed');
    } finally {
      await failing.close(1_000).catch(() => undefined);
      await next?.close(1_000);
      const keys = await connection.keys(`${prefix}:*`);
      if (keys.length) await connection.del(...keys);
      await connection.quit();
    }
  }, 40_000);
});

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
