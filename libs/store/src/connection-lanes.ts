// The order in which statements get a pooled connection when every one is busy. node-postgres's pool hands them out
// first come, first served: under load a session create or a dashboard read waited behind the runs' statements
// (HTTP bench, 100 sessions: create p50 ~150 ms, all of it waiting for one of 10 connections). Here a statement
// says which lane it is in:
// - 'request': what a caller waits for as such (reads, creates, settings; the default);
// - 'run': the run engine's statements (claiming a run, loading it, committing it): work in bulk whose latency is
//   the run's, dominated by the model in any real deployment.
// A free permit goes to the request lane first, but never more than REQUEST_BURST times in a row while runs wait,
// so no lane starves: a flood of reads still lets every ninth connection go to the runs.

export type Lane = 'request' | 'run';

/** Request-lane grants in a row, while the run lane waits, before one goes to the run lane. */
export const REQUEST_BURST = 8;

interface Waiter {
  grant(): void;
  timer: NodeJS.Timeout;
}

export class ConnectionLanes {
  private inUse = 0;
  private readonly waiting: Record<Lane, Waiter[]> = { request: [], run: [] };
  /** Request-lane grants since the run lane last got one while it waited. */
  private requestStreak = 0;

  /**
   * @param permits how many statements may hold a connection at once (the pool's size)
   * @param timeoutError what a wait past its deadline fails with
   */
  constructor(
    private readonly permits: number,
    private readonly timeoutError: () => Error,
  ) {
    if (!(permits >= 1)) throw new Error(`ConnectionLanes needs at least one permit: ${permits}`);
  }

  /** Waits for a permit in `lane`, at most `timeoutMs`; release() gives it back (exactly once). */
  acquire(lane: Lane, timeoutMs: number): Promise<void> {
    if (this.inUse < this.permits) {
      this.inUse++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const queue = this.waiting[lane];
      const waiter: Waiter = {
        grant: () => {
          clearTimeout(waiter.timer);
          resolve();
        },
        timer: setTimeout(() => {
          const at = queue.indexOf(waiter);
          if (at >= 0) queue.splice(at, 1);
          reject(this.timeoutError());
        }, timeoutMs),
      };
      queue.push(waiter);
    });
  }

  /** Gives a permit back: straight to the next waiter (the permit stays in use), or to the free count. */
  release(): void {
    const next = this.next();
    if (next) next.grant();
    else this.inUse = Math.max(0, this.inUse - 1);
  }

  /** Waiters per lane, and permits in use. */
  get state(): { inUse: number; request: number; run: number } {
    return { inUse: this.inUse, request: this.waiting.request.length, run: this.waiting.run.length };
  }

  private next(): Waiter | undefined {
    const runsWait = this.waiting.run.length > 0;
    if (this.waiting.request.length > 0 && (!runsWait || this.requestStreak < REQUEST_BURST)) {
      if (runsWait) this.requestStreak++;
      return this.waiting.request.shift();
    }
    this.requestStreak = 0;
    return this.waiting.run.shift();
  }
}
