// The embedded runtime's timers: setTimeout per key (unref'd, so they never hold the process open). They do not
// survive a restart; the engine sets again on boot the ones it can derive from the store (paused runs' expiries).
// A handler that throws is reported, not retried.

import { dispatchTimer, timerKey } from './timer-jobs';
import type { RetentionTimer, Timer, TimerHandlers, Timers } from './timers.port';

export class InProcessTimers implements Timers {
  private readonly pending = new Map<string, { timer: Timer; handle: NodeJS.Timeout }>();
  private handlers: TimerHandlers | null = null;
  private readonly firing = new Set<Promise<void>>();
  private readonly repeating = new Map<string, NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly onError: (err: unknown, timer: Timer) => void = () => undefined) {}

  set(timer: Timer, delayMs: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    const key = timerKey(timer);
    this.drop(key);
    const handle = setTimeout(() => this.fire(key), Math.max(0, delayMs));
    handle.unref();
    this.pending.set(key, { timer, handle });
    return Promise.resolve();
  }

  ensure(timer: Timer, delayMs: number): Promise<void> {
    if (this.pending.has(timerKey(timer))) return Promise.resolve();
    return this.set(timer, delayMs);
  }

  repeat(timer: RetentionTimer, everyMs: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    const key = timerKey(timer);
    clearInterval(this.repeating.get(key));
    let running = false;
    const handle = setInterval(
      () => {
        // A sweep still running when the next is due is not doubled.
        if (running) return;
        running = true;
        void this.dispatch(timer).finally(() => (running = false));
      },
      Math.max(1, everyMs),
    );
    handle.unref();
    this.repeating.set(key, handle);
    return Promise.resolve();
  }

  clear(timer: Timer): Promise<void> {
    this.drop(timerKey(timer));
    return Promise.resolve();
  }

  process(handlers: TimerHandlers): void {
    if (this.handlers) throw new Error('the timers already have handlers');
    this.handlers = handlers;
  }

  /** Timers set and not fired yet. */
  get size(): number {
    return this.pending.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const key of [...this.pending.keys()]) this.drop(key);
    for (const handle of this.repeating.values()) clearInterval(handle);
    this.repeating.clear();
    await Promise.allSettled([...this.firing]);
  }

  private drop(key: string): void {
    const entry = this.pending.get(key);
    if (!entry) return;
    clearTimeout(entry.handle);
    this.pending.delete(key);
  }

  private fire(key: string): void {
    const entry = this.pending.get(key);
    this.pending.delete(key);
    if (!entry) return;
    void this.dispatch(entry.timer);
  }

  private dispatch(timer: Timer): Promise<void> {
    if (!this.handlers) return Promise.resolve();
    const task: Promise<void> = dispatchTimer(this.handlers, timer)
      .catch((err: unknown) => {
        try {
          this.onError(err, timer);
        } catch {
          // reporting is best effort
        }
      })
      .finally(() => this.firing.delete(task));
    this.firing.add(task);
    return task;
  }
}
