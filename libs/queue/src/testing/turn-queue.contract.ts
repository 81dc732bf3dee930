// The TurnQueue contract, run against every adapter (inline and BullMQ). Jest's functions come from the caller's
// test file so this module loads outside jest too.

import { randomUUID } from 'node:crypto';
import type { RunJob, TurnQueue } from '../turn-queue.port';

interface JestLike {
  describe: (name: string, fn: () => void) => void;
  it: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  expect: (value: unknown) => {
    toBe(v: unknown): void;
    toEqual(v: unknown): void;
    toBeLessThanOrEqual(v: number): void;
    toBeGreaterThanOrEqual(v: number): void;
  };
}

export interface TurnQueueFixture {
  queue: TurnQueue;
  cleanup: () => Promise<void>;
}

export interface TurnQueueContractOptions {
  /** Attempts a failing run gets before it is given up (1 for the inline queue). */
  attempts: number;
  runsInline: boolean;
}

async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const job = (): RunJob => ({ tenantId: randomUUID(), sessionId: 's1', runId: randomUUID() });

export function describeTurnQueueContract(
  name: string,
  make: () => Promise<TurnQueueFixture>,
  options: TurnQueueContractOptions,
  { describe, it, expect }: JestLike,
): void {
  describe(`TurnQueue contract: ${name}`, () => {
    it('says whether runs execute in this process', async () => {
      const { queue, cleanup } = await make();
      try {
        expect(queue.runsInline).toBe(options.runsInline);
      } finally {
        await cleanup();
      }
    });

    it('hands every enqueued run to the handler, with its payload, once', async () => {
      const { queue, cleanup } = await make();
      try {
        const seen: RunJob[] = [];
        queue.process(
          (j) => {
            seen.push(j);
            return Promise.resolve();
          },
          () => Promise.resolve(),
        );
        const jobs = [job(), job(), job()];
        for (const j of jobs) await queue.enqueue(j);
        await until(() => seen.length === jobs.length);
        expect([...seen].sort((a, b) => a.runId.localeCompare(b.runId))).toEqual(
          [...jobs].sort((a, b) => a.runId.localeCompare(b.runId)),
        );
      } finally {
        await cleanup();
      }
    });

    it('does not run a run twice when it is enqueued again while queued or running', async () => {
      const { queue, cleanup } = await make();
      try {
        let calls = 0;
        let release!: () => void;
        const held = new Promise<void>((r) => (release = r));
        queue.process(
          async () => {
            calls++;
            await held;
          },
          () => Promise.resolve(),
        );
        const j = job();
        await queue.enqueue(j);
        await queue.enqueue(j);
        await until(() => calls === 1);
        await queue.enqueue(j);
        await new Promise((r) => setTimeout(r, 300));
        release();
        await new Promise((r) => setTimeout(r, 100));
        expect(calls).toBe(1);
      } finally {
        await cleanup();
      }
    });

    it('runs each resume of a run as a job of its own, after the run paused (its job done)', async () => {
      const { queue, cleanup } = await make();
      try {
        const seen: RunJob[] = [];
        queue.process(
          (j) => {
            seen.push(j);
            return Promise.resolve();
          },
          () => Promise.resolve(),
        );
        const j = job();
        await queue.enqueue(j);
        await until(() => seen.length === 1);
        await new Promise((r) => setTimeout(r, 100)); // the first job is done, not only started
        await queue.enqueue({ ...j, resumedAt: 1 });
        await until(() => seen.length === 2);
        await queue.enqueue({ ...j, resumedAt: 3 });
        await until(() => seen.length === 3);
        expect(seen.map((s) => s.resumedAt)).toEqual([undefined, 1, 3]);
      } finally {
        await cleanup();
      }
    });

    it('gives a run that keeps failing up exactly once, after its attempts', async () => {
      const { queue, cleanup } = await make();
      try {
        let attempts = 0;
        const givenUp: Array<{ job: RunJob; error: unknown }> = [];
        queue.process(
          () => {
            attempts++;
            return Promise.reject(new Error('boom'));
          },
          (j, error) => {
            givenUp.push({ job: j, error });
            return Promise.resolve();
          },
        );
        const j = job();
        await queue.enqueue(j);
        await until(() => givenUp.length === 1, 30_000);
        await new Promise((r) => setTimeout(r, 200));
        expect(givenUp.length).toBe(1);
        expect(givenUp[0]!.job).toEqual(j);
        expect((givenUp[0]!.error as Error).message).toBe('boom');
        expect(attempts).toBe(options.attempts);
      } finally {
        await cleanup();
      }
    }, 60_000);

    it('waits for runs in flight when it closes', async () => {
      const { queue, cleanup } = await make();
      let finished = false;
      try {
        queue.process(
          async () => {
            await new Promise((r) => setTimeout(r, 300));
            finished = true;
          },
          () => Promise.resolve(),
        );
        await queue.enqueue(job());
        await new Promise((r) => setTimeout(r, 150));
        await queue.close(5_000);
        expect(finished).toBe(true);
      } finally {
        await cleanup();
      }
    });
  });
}
