// The embedded runtime's timers: setTimeout per key (unref'd, so they never hold the process open). They do not
// survive a restart; the engine sets again on boot the ones it can derive from the store (paused runs' expiries).
// A handler that throws is reported, not retried.

import { dispatchTimer, timerKey } from './timer-jobs';
import type { Timer, TimerHandlers, Timers } from './timers.port';

export class InProcessTimers implements Timers {
  private readonly pending = new Map<string, { timer: Timer; handle: NodeJS.Timeout }>();
  private handlers: TimerHandlers | null = null;
  private readonly firing = new Set<Promise<void>>();
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
    if (!entry || !this.handlers) return;
    const task = dispatchTimer(this.handlers, entry.timer)
      .catch((err: unknown) => {
        try {
          this.onError(err, entry.timer);
        } catch {
          // reporting is best effort
        }
      })
      .finally(() => this.firing.delete(task));
    this.firing.add(task);
  }
}
