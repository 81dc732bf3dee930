// Heavy operations (imports, bulk exports and deletes, forks) share the database with every tenant's requests, so
// two rules keep one tenant's heavy work from taking another's latency:
// - a tenant has at most a few in flight across the deployment (leases in the database, renewed while the
//   operation works): one more answers 429 too_many_operations with Retry-After;
// - the batches of imports take turns, one at a time per process, and after each the import waits in proportion
//   to how long the batch held the database, leaving it to the requests of others (the embedded database runs one
//   statement at a time: a batch is a moment when nothing else runs).

import { randomBytes } from 'node:crypto';
import { CanopyException } from '@canopy/common';
import type { Scope } from '@canopy/core';
import type { HeavyOperationsRepository } from '@canopy/store';

export type HeavyKind = 'import' | 'export' | 'delete' | 'fork';

/** A lease lapses this long after its last renewal (its process died); it is renewed every third of it. */
const LEASE_MS = 30_000;

/** What a refused operation's Retry-After says. */
const RETRY_AFTER_SECONDS = 2;

export interface HeavyOperationsOptions {
  perTenant: number;
  /** Pause after each import batch, as a multiple of the batch's time. */
  batchPauseRatio: number;
}

export class HeavyOperations {
  private turn: Promise<void> = Promise.resolve();

  constructor(
    private readonly leases: HeavyOperationsRepository,
    private readonly options: HeavyOperationsOptions,
  ) {}

  /** Runs `fn` under a lease of the tenant's; 429 too_many_operations when it holds as many as it may. */
  async run<T>(scope: Scope, kind: HeavyKind, fn: () => Promise<T>): Promise<T> {
    const end = await this.begin(scope, kind);
    try {
      return await fn();
    } finally {
      await end();
    }
  }

  /** Takes a lease for an operation that outlives one call (a stream); answers its end, to call once. */
  async begin(scope: Scope, kind: HeavyKind): Promise<() => Promise<void>> {
    const id = randomBytes(12).toString('base64url');
    if (!(await this.leases.acquire(scope, id, kind, this.options.perTenant, LEASE_MS))) {
      throw new CanopyException(
        'too_many_operations',
        `the tenant has ${this.options.perTenant} heavy operations (imports, bulk exports and deletes, forks) in flight; retry when one ends`,
        { limit: this.options.perTenant, retryAfterSeconds: RETRY_AFTER_SECONDS },
      );
    }
    const renewal = setInterval(() => {
      // A renewal that fails (the database is away) is tried again; the lease lapses only if none succeeds.
      void this.leases.renew(scope, id, LEASE_MS).catch(() => undefined);
    }, LEASE_MS / 3);
    renewal.unref();
    let ended = false;
    return async () => {
      if (ended) return;
      ended = true;
      clearInterval(renewal);
      // Not given back (the database is away): it lapses on its own.
      await this.leases.release(scope, id).catch(() => undefined);
    };
  }

  /**
   * Runs one import batch when this process's earlier batches are done (of any tenant: they queue in order), then
   * holds the turn for the pause that leaves the database to others.
   */
  async batch<T>(fn: () => Promise<T>): Promise<T> {
    const previous = this.turn;
    let done!: () => void;
    this.turn = new Promise<void>((resolve) => (done = resolve));
    await previous;
    const started = performance.now();
    try {
      return await fn();
    } finally {
      const pause = (performance.now() - started) * this.options.batchPauseRatio;
      if (pause >= 1) setTimeout(done, pause).unref();
      else done();
    }
  }
}
