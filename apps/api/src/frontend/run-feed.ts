// One run's events as an async iterable, for the frontend protocols' streams: fed by a session subscription taken
// before the run starts (so nothing of it is missed), read in order by the protocol's translation. Events of other
// runs are left out; session-level events (tree, store, context, ...) pass. The reader stops after the run's last
// event (isLastOfRun, or the commit that follows it); the feed also ends when the session ends under it or when it
// is closed.

import { RUN_EVENT_TYPES, type SessionEvent } from '@canopy/core';

export class RunFeed implements AsyncIterable<SessionEvent> {
  private readonly queue: SessionEvent[] = [];
  private wake: (() => void) | null = null;
  private closed = false;
  private runId: string | null = null;
  /** Why the session ended under the feed (closed, deleted, shutdown), if it did. */
  endedBy: string | null = null;

  /** The run the feed is of; events that came before it was known are kept and filtered when read. */
  follow(runId: string): void {
    this.runId = runId;
  }

  push(event: SessionEvent): void {
    if (this.closed) return;
    this.queue.push(event);
    this.signal();
  }

  /** The session ended under the feed: what is queued is still read, then the feed ends. */
  end(reason: string): void {
    this.endedBy ??= reason;
    this.close();
  }

  close(): void {
    this.closed = true;
    this.signal();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SessionEvent> {
    for (;;) {
      const event = this.queue.shift();
      if (event === undefined) {
        if (this.closed) return;
        await new Promise<void>((resolve) => (this.wake = resolve));
        continue;
      }
      if (!this.isOfRun(event)) continue;
      yield event;
    }
  }

  private isOfRun(event: SessionEvent): boolean {
    if (event.type === 'snapshot') return false;
    if (!RUN_EVENT_TYPES.has(event.type) && event.type !== 'error') return true;
    const runId = (event.data as { runId?: string | null }).runId ?? null;
    return runId !== null && runId === this.runId;
  }

  private signal(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}

/** The run's last event: it stopped (its final turn), paused, was cancelled or failed. */
export function isLastOfRun(event: SessionEvent): boolean {
  switch (event.type) {
    case 'turn':
      return event.data.stop === 'stop';
    case 'pause':
    case 'cancelled':
    case 'error':
      return true;
    default:
      return false;
  }
}
