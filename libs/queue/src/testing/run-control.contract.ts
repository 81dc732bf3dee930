// The RunControl contract, run against the in-process and Redis adapters: a cancel reaches the process holding
// the run (and only it acknowledges) with its reason (a cancel or an interrupt), a close notice reaches every
// process. Jest's functions come from the caller's test file so this module loads outside jest too.

import { randomUUID } from 'node:crypto';
import type { RunControl, SessionCloseReason } from '../run-control';

interface JestLike {
  describe: (name: string, fn: () => void) => void;
  it: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  expect: (value: unknown) => { toBe(v: unknown): void; toEqual(v: unknown): void };
}

export interface RunControlFixture {
  /** Processes of one deployment (the in-process adapter has exactly one). */
  controls: RunControl[];
  cleanup: () => Promise<void>;
}

type Closed = [string, string, SessionCloseReason];

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function describeRunControlContract(
  name: string,
  make: () => Promise<RunControlFixture>,
  { describe, it, expect }: JestLike,
): void {
  describe(`RunControl contract: ${name}`, () => {
    it('a cancel is acknowledged by the process holding the run, and only then', async () => {
      const { controls, cleanup } = await make();
      try {
        const held = randomUUID();
        const holder = controls[controls.length - 1]!;
        const asked: string[][] = controls.map(() => []);
        controls.forEach((c, i) =>
          c.onCancel((runId) => {
            asked[i]!.push(runId);
            return c === holder && runId === held;
          }),
        );
        const asker = controls[0]!;
        expect(await asker.requestCancel(held, 2_000)).toBe(true);
        expect(await asker.requestCancel(randomUUID(), 300)).toBe(false);
        expect(asked[controls.length - 1]!.includes(held)).toBe(true);
      } finally {
        await cleanup();
      }
    });

    it('a cancel carries its reason to the holder: a cancel by default, or an interrupt', async () => {
      const { controls, cleanup } = await make();
      try {
        const held = randomUUID();
        const holder = controls[controls.length - 1]!;
        const heard: string[] = [];
        controls.forEach((c) =>
          c.onCancel((runId, reason) => {
            if (c !== holder || runId !== held) return false;
            heard.push(reason);
            return true;
          }),
        );
        expect(await controls[0]!.requestCancel(held, 2_000)).toBe(true);
        expect(await controls[0]!.requestCancel(held, 2_000, 'interrupted')).toBe(true);
        expect(heard).toEqual(['cancelled', 'interrupted']);
      } finally {
        await cleanup();
      }
    });

    it('a close notice reaches every process, the sender first', async () => {
      const { controls, cleanup } = await make();
      try {
        const closed: Closed[][] = controls.map(() => []);
        controls.forEach((c, i) =>
          c.onClose((tenantId, sessionId, reason) => {
            closed[i]!.push([tenantId, sessionId, reason]);
            return Promise.resolve();
          }),
        );
        const tenant = randomUUID();
        await controls[0]!.closeEverywhere(tenant, 's1', 'idle');
        // The sender has acted by the time closeEverywhere resolves.
        expect(closed[0]).toEqual([[tenant, 's1', 'idle']]);
        await until(() => closed.every((c) => c.length === 1));
        expect(closed.map((c) => c[0])).toEqual(controls.map(() => [tenant, 's1', 'idle']));
      } finally {
        await cleanup();
      }
    });
  });
}
