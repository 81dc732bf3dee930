// Waiting in contract tests: for a condition, with a deadline (adapters may deliver asynchronously).

import { randomUUID } from 'node:crypto';
import { eventually } from '@canopy/testing/eventually';

/** Resolves once condition() is true; rejects naming `what` when the deadline passes first. */
export function waitFor(what: string, condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  return eventually(
    () => {
      if (!condition()) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    },
    { timeoutMs, intervalMs: 2 },
  );
}

/** Resolves once the wall clock has moved past `ms`, so the next timestamp an adapter takes is later. */
export function clockPast(ms: number): Promise<void> {
  return waitFor(`the clock to pass ${ms}`, () => Date.now() > ms);
}

/** A fresh id, so tests never see each other's data even when adapters share a store. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}
