// Merges bursts of streaming deltas before they reach the EventBus, so a fast model does not cost one publish (one
// Redis round trip) per token: a delta goes out at once when the last delta published is at least a window old
// (the leading edge: a model streaming slower than the window adds no latency); one that follows a published delta
// within the window waits for the window's end, merged with every delta of the same content block that comes
// meanwhile (or until maxChars), so a block publishes at most about one delta event per window. It never reorders
// and never drops: anything that is not a delta of the buffered block first flushes the buffer, and batches reach
// `flush` one at a time, in push order.

import type { SessionEventInput } from '@canopy/core';

type DeltaEvent = Extract<SessionEventInput, { type: 'text_delta' | 'thinking_delta' | 'tool_use_delta' }>;

export interface DeltaCoalescerOptions {
  /** How long the first buffered delta may wait for more (0: no coalescing, every push goes out at once). */
  windowMs: number;
  /** A merged delta never grows beyond this many characters (default 2048); a longer single delta goes alone. */
  maxChars?: number;
  /** Publishes one batch, in order; the next batch waits until the returned promise settles. */
  flush: (events: SessionEventInput[]) => Promise<unknown> | void;
  /** Gets a batch's failure; without it, the failure is rethrown by the next flush() or close(). */
  onError?: (error: unknown, events: SessionEventInput[]) => void;
  /** Wall-clock milliseconds (default Date.now), to tell whether the window is over. */
  now?: () => number;
}

interface Buffered {
  event: DeltaEvent;
  /** When the buffer goes out (a window after the last delta published); later deltas start a new one. */
  dueAt: number;
}

export class DeltaCoalescer {
  private readonly windowMs: number;
  private readonly maxChars: number;
  private readonly now: () => number;
  private buffered: Buffered | null = null;
  /** When a delta last went out (at once or from the buffer). */
  private lastDeltaAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;
  /** Settles when every batch handed out so far has been flushed. */
  private tail: Promise<void> = Promise.resolve();
  /** Batches handed out and not flushed yet. */
  private unflushed = 0;
  private failure: { error: unknown } | null = null;
  private closed = false;

  constructor(private readonly options: DeltaCoalescerOptions) {
    if (!(options.windowMs >= 0)) throw new RangeError(`windowMs must be >= 0, got ${options.windowMs}`);
    const maxChars = options.maxChars ?? 2048;
    if (!(maxChars >= 1)) throw new RangeError(`maxChars must be >= 1, got ${maxChars}`);
    this.windowMs = options.windowMs;
    this.maxChars = maxChars;
    this.now = options.now ?? Date.now;
  }

  push(event: SessionEventInput): void {
    if (this.closed) throw new Error('DeltaCoalescer is closed');
    if (this.windowMs === 0) {
      this.emit([event]);
      return;
    }
    if (!isDelta(event)) {
      // The buffered delta and this event go out together: one batch, in order.
      this.emit([...this.take(), event]);
      return;
    }
    const buffered = this.buffered;
    const now = this.now();
    if (buffered && this.canMerge(buffered, event, now)) {
      buffered.event = mergeDeltas(buffered.event, event);
      if (buffered.event.data.delta.length >= this.maxChars) this.emitBuffered();
      return;
    }
    this.emitBuffered();
    const dueAt = this.lastDeltaAt + this.windowMs;
    if (now >= dueAt || event.data.delta.length >= this.maxChars) {
      // The leading edge: nothing published within the window, so nothing to merge with and no reason to wait.
      this.lastDeltaAt = now;
      this.emit([event]);
      return;
    }
    this.buffered = { event: copyDelta(event), dueAt };
    const timer = setTimeout(() => this.emitBuffered(), dueAt - now);
    timer.unref();
    this.timer = timer;
  }

  /** Publishes what is buffered now; resolves when every batch pushed so far has been flushed. */
  async flush(): Promise<void> {
    this.emitBuffered();
    await this.tail;
    const failure = this.failure;
    if (failure) {
      this.failure = null;
      throw failure.error;
    }
  }

  /** Flushes what is buffered; later pushes throw. */
  close(): Promise<void> {
    this.closed = true;
    return this.flush();
  }

  private canMerge(buffered: Buffered, event: DeltaEvent, now: number): boolean {
    const held = buffered.event;
    return (
      held.type === event.type &&
      held.data.runId === event.data.runId &&
      held.data.index === event.data.index &&
      now < buffered.dueAt &&
      held.data.delta.length + event.data.delta.length <= this.maxChars
    );
  }

  /** Empties the buffer (and stops its timer), returning what it held (which goes out now). */
  private take(): SessionEventInput[] {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const buffered = this.buffered;
    if (!buffered) return [];
    this.buffered = null;
    this.lastDeltaAt = this.now();
    return [buffered.event];
  }

  private emitBuffered(): void {
    const events = this.take();
    if (events.length > 0) this.emit(events);
  }

  /** Queues a batch behind the previous one, so batches reach `flush` in order even when it is async. */
  private emit(events: SessionEventInput[]): void {
    // With nothing in flight the batch goes out now (one promise less per delta than a queue behind a settled one).
    this.tail = this.unflushed++ === 0 ? this.deliver(events) : this.tail.then(() => this.deliver(events));
  }

  private async deliver(events: SessionEventInput[]): Promise<void> {
    try {
      await this.options.flush(events);
    } catch (error) {
      try {
        if (!this.options.onError) throw error;
        this.options.onError(error, events);
      } catch (unreported) {
        // Kept for the caller's next flush() / close(); the batches behind this one still go out.
        this.failure ??= { error: unreported };
      }
    } finally {
      this.unflushed--;
    }
  }
}

function isDelta(event: SessionEventInput): event is DeltaEvent {
  return event.type === 'text_delta' || event.type === 'thinking_delta' || event.type === 'tool_use_delta';
}

/** A copy, so merging never changes an event the producer still holds. */
function copyDelta(event: DeltaEvent): DeltaEvent {
  return { ...event, data: { ...event.data } } as DeltaEvent;
}

function mergeDeltas(held: DeltaEvent, next: DeltaEvent): DeltaEvent {
  return { ...held, data: { ...held.data, delta: held.data.delta + next.data.delta } } as DeltaEvent;
}
