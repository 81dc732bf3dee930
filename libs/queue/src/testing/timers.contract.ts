// The Timers contract, run against every adapter (in-process and BullMQ). Jest's functions come from the caller's
// test file so this module loads outside jest too.

import { randomUUID } from 'node:crypto';
import type { DecisionTimer, IdleTimer, Timer, Timers } from '../timers.port';

interface JestLike {
  describe: (name: string, fn: () => void) => void;
  it: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  expect: (value: unknown) => {
    toBe(v: unknown): void;
    toEqual(v: unknown): void;
    toBeGreaterThanOrEqual(v: number): void;
    toBeLessThan(v: number): void;
  };
}

export interface TimersFixture {
  timers: Timers;
  cleanup: () => Promise<void>;
}

interface Fired {
  timer: Timer;
  at: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

const idle = (): IdleTimer => ({ kind: 'session-idle', tenantId: randomUUID(), sessionId: 's:1/é' });
const expiry = (toolUseIds = ['toolu_1']): DecisionTimer => ({
  kind: 'decision-expiry',
  tenantId: randomUUID(),
  sessionId: 's1',
  runId: randomUUID(),
  toolUseIds,
});

export function describeTimersContract(
  name: string,
  make: () => Promise<TimersFixture>,
  { describe, it, expect }: JestLike,
): void {
  describe(`Timers contract: ${name}`, () => {
    /** A fixture whose handlers record what fired and when. */
    async function recording(): Promise<TimersFixture & { fired: Fired[] }> {
      const fixture = await make();
      const fired: Fired[] = [];
      const record = (timer: Timer) => {
        fired.push({ timer, at: Date.now() });
        return Promise.resolve();
      };
      fixture.timers.process({
        'session-idle': record,
        'decision-expiry': record,
        'retention-sweep': record,
      });
      return { ...fixture, fired };
    }

    it('fires a timer once, after its delay, with its payload', async () => {
      const { timers, cleanup, fired } = await recording();
      try {
        const timer = idle();
        const setAt = Date.now();
        await timers.set(timer, 300);
        await until(() => fired.length === 1);
        expect(fired[0]!.timer).toEqual(timer);
        expect(fired[0]!.at - setAt).toBeGreaterThanOrEqual(290);
        await sleep(400);
        expect(fired.length).toBe(1);
      } finally {
        await cleanup();
      }
    });

    it('moves a timer set again (the last set wins; it fires once)', async () => {
      const { timers, cleanup, fired } = await recording();
      try {
        const timer = idle();
        await timers.set(timer, 300);
        await sleep(150);
        const movedAt = Date.now();
        await timers.set(timer, 400);
        await until(() => fired.length === 1);
        expect(fired[0]!.at - movedAt).toBeGreaterThanOrEqual(390);
        await sleep(500);
        expect(fired.length).toBe(1);
      } finally {
        await cleanup();
      }
    });

    it('moves a timer set again to an earlier time', async () => {
      const { timers, cleanup, fired } = await recording();
      try {
        const timer = idle();
        await timers.set(timer, 5_000);
        const movedAt = Date.now();
        await timers.set(timer, 200);
        await until(() => fired.length === 1);
        expect(fired[0]!.at - movedAt).toBeGreaterThanOrEqual(190);
        expect(fired[0]!.at - movedAt).toBeLessThan(4_000);
      } finally {
        await cleanup();
      }
    });

    it('does not fire a cleared timer', async () => {
      const { timers, cleanup, fired } = await recording();
      try {
        const timer = expiry();
        const other = idle();
        await timers.set(timer, 200);
        await timers.set(other, 300);
        await timers.clear(timer);
        await until(() => fired.length === 1);
        await sleep(300);
        expect(fired.map((f) => f.timer)).toEqual([other]);
      } finally {
        await cleanup();
      }
    });

    it('ensure leaves a timer already set where it is', async () => {
      const { timers, cleanup, fired } = await recording();
      try {
        const timer = expiry(['a', 'b']);
        const setAt = Date.now();
        await timers.set(timer, 200);
        await timers.ensure(timer, 5_000);
        await until(() => fired.length === 1, 3_000);
        expect(fired[0]!.at - setAt).toBeGreaterThanOrEqual(190);
        // Fired and gone: ensure sets it again.
        await timers.ensure(timer, 50);
        await until(() => fired.length === 2);
      } finally {
        await cleanup();
      }
    });

    it('keeps timers of different keys apart (each pause of a run has its own expiry)', async () => {
      const { timers, cleanup, fired } = await recording();
      try {
        const first = expiry(['toolu_1']);
        const second: DecisionTimer = { ...first, toolUseIds: ['toolu_2', 'toolu_3'] };
        await timers.set(first, 100);
        await timers.set(second, 150);
        await until(() => fired.length === 2);
        expect(fired.map((f) => f.timer)).toEqual([first, second]);
      } finally {
        await cleanup();
      }
    });

    it('goes on firing after a handler fails', async () => {
      const fixture = await make();
      const seen: Timer[] = [];
      fixture.timers.process({
        'session-idle': (t) => {
          seen.push(t);
          return Promise.reject(new Error('handler failed'));
        },
        'decision-expiry': (t) => {
          seen.push(t);
          return Promise.resolve();
        },
        'retention-sweep': () => Promise.resolve(),
      });
      try {
        const failing = idle();
        const next = expiry();
        await fixture.timers.set(failing, 10);
        await until(() => seen.length >= 1);
        await fixture.timers.set(next, 10);
        await until(() => seen.some((t) => t.kind === 'decision-expiry'));
        expect(seen[0]).toEqual(failing);
      } finally {
        await fixture.cleanup();
      }
    });

    it('repeats a repeating timer at its interval, once however often it is asked for, until closed', async () => {
      const { timers, cleanup, fired } = await recording();
      try {
        // Asked twice (two processes starting, or one restarting): still one timer.
        await timers.repeat({ kind: 'retention-sweep' }, 150);
        await timers.repeat({ kind: 'retention-sweep' }, 150);
        await until(() => fired.length >= 4);
        const sweeps = fired.filter((f) => f.timer.kind === 'retention-sweep');
        expect(sweeps.length).toBe(fired.length);
        // A doubled schedule fires twice at each due time; one schedule's firings after its first (which BullMQ's
        // scheduler may run at once, just before its first interval boundary) are an interval (150 ms) apart.
        const gaps = [sweeps[2]!.at - sweeps[1]!.at, sweeps[3]!.at - sweeps[2]!.at];
        expect(Math.min(...gaps)).toBeGreaterThanOrEqual(40);
      } finally {
        await cleanup();
      }
    });
  });
}
