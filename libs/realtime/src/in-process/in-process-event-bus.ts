// The embedded runtime's EventBus: per-session sequence counters, bounded replay logs and subscriber sets in
// this process's memory. Numbering, appending and delivering a batch is one synchronous step, so order, replay
// and delivery always agree.

import type { SessionEvent, SessionEventInput } from '@canopy/core';

import type { EventBus, ReplayResult, Unsubscribe } from '../ports';
import { callListener, logListenerError, type ListenerErrorHandler } from './listener-errors';

export interface InProcessEventBusOptions {
  /** How many of a session's latest events its replay log keeps (a positive integer). */
  replayLimit: number;
  /** Wall-clock milliseconds: stamps `at` and sets where a session's sequence starts. */
  now?: () => number;
  /** Where a throwing subscriber's error goes (default: an error log line). */
  onListenerError?: ListenerErrorHandler;
}

type Listener = (event: SessionEvent) => void;

interface SessionStream {
  /** The last assigned seq (0 before the first publish in this instance). */
  seq: number;
  /** The replay log, oldest first, at most replayLimit long. */
  log: SessionEvent[];
  listeners: Set<Listener>;
  /** Events numbered but not yet delivered (a listener published while delivery was running). */
  undelivered: SessionEvent[];
  delivering: boolean;
}

export class InProcessEventBus implements EventBus {
  private readonly replayLimit: number;
  private readonly now: () => number;
  private readonly onListenerError: ListenerErrorHandler;
  private readonly streams = new Map<string, SessionStream>();
  private closed = false;

  constructor(options: InProcessEventBusOptions) {
    if (!Number.isSafeInteger(options.replayLimit) || options.replayLimit < 1) {
      throw new RangeError(`replayLimit must be a positive integer, got ${options.replayLimit}`);
    }
    this.replayLimit = options.replayLimit;
    this.now = options.now ?? Date.now;
    this.onListenerError = options.onListenerError ?? logListenerError(InProcessEventBus.name);
  }

  publish(tenantId: string, sessionId: string, events: SessionEventInput[]): Promise<SessionEvent[]> {
    if (this.closed) return Promise.reject(closedError());
    if (events.length === 0) return Promise.resolve([]);
    const stream = this.stream(tenantId, sessionId);
    if (stream.seq === 0) {
      // Nothing of this session survives a restart of the process, yet clients still hold seqs from before it
      // (a reconnect sends after=<seq>). Starting at the wall clock in microseconds puts a fresh sequence above
      // every earlier one as long as fewer than 1000 events per millisecond were published since the earlier
      // sequence started; the jump also leaves a gap, so a replay across the restart answers complete=false and
      // the client starts over from a snapshot instead of silently missing the lost events. (Microseconds stay
      // safe integers until the year 2255.)
      stream.seq = freshStart(this.now());
    } else {
      stream.seq += 1;
    }
    const at = this.now();
    const first = stream.seq;
    stream.seq += events.length - 1;
    // Literals, not spreads of the inputs: a spread per event was a measured share of the Redis bus's publish.
    const numbered = events.map(
      ({ type, data }, i) => ({ type, data, seq: first + i, sessionId, at }) as SessionEvent,
    );

    for (const event of numbered) {
      stream.log.push(event);
      stream.undelivered.push(event);
    }
    if (stream.log.length > this.replayLimit) stream.log.splice(0, stream.log.length - this.replayLimit);
    this.deliver(stream);
    return Promise.resolve(numbered);
  }

  subscribe(tenantId: string, sessionId: string, listener: Listener): Promise<Unsubscribe> {
    if (this.closed) return Promise.reject(closedError());
    const stream = this.stream(tenantId, sessionId);
    // A wrapper, so that the same function subscribed twice is two subscriptions.
    const subscription: Listener = (event) => listener(event);
    stream.listeners.add(subscription);
    return Promise.resolve(() => {
      stream.listeners.delete(subscription);
      return Promise.resolve();
    });
  }

  replay(tenantId: string, sessionId: string, after: number): Promise<ReplayResult> {
    const stream = this.streams.get(key(tenantId, sessionId));
    if (!stream) return Promise.resolve({ events: [], complete: true, lastSeq: 0 });
    const { log, seq: lastSeq } = stream;
    const firstRetained = log[0]?.seq ?? lastSeq + 1;
    return Promise.resolve({
      events: log.filter((event) => event.seq > after),
      complete: lastSeq <= after || firstRetained <= after + 1,
      lastSeq,
    });
  }

  lastSeq(tenantId: string, sessionId: string): Promise<number> {
    return Promise.resolve(this.streams.get(key(tenantId, sessionId))?.seq ?? 0);
  }

  anchor(tenantId: string, sessionId: string): Promise<number> {
    if (this.closed) return Promise.reject(closedError());
    const stream = this.stream(tenantId, sessionId);
    // Where a first publish would start the sequence (see publish), minus one: the first event follows it.
    if (stream.seq === 0) stream.seq = Math.max(1, freshStart(this.now()) - 1);
    return Promise.resolve(stream.seq);
  }

  forget(tenantId: string, sessionId: string): Promise<void> {
    // The counter stays (a few bytes per deleted session) so this instance never reuses a seq; subscribers stay
    // too, they belong to whoever subscribed them.
    const stream = this.streams.get(key(tenantId, sessionId));
    if (stream) stream.log = [];
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.closed = true;
    for (const stream of this.streams.values()) stream.listeners.clear();
    this.streams.clear();
    return Promise.resolve();
  }

  private stream(tenantId: string, sessionId: string): SessionStream {
    const k = key(tenantId, sessionId);
    let stream = this.streams.get(k);
    if (!stream) {
      stream = { seq: 0, log: [], listeners: new Set(), undelivered: [], delivering: false };
      this.streams.set(k, stream);
    }
    return stream;
  }

  /**
   * Delivers the stream's undelivered events in seq order. A listener that publishes to the same session only
   * queues its events: the outermost call delivers them after the current ones, so no subscriber ever sees a
   * later seq before an earlier one.
   */
  private deliver(stream: SessionStream): void {
    if (stream.delivering) return;
    stream.delivering = true;
    try {
      for (let event = stream.undelivered.shift(); event; event = stream.undelivered.shift()) {
        for (const listener of [...stream.listeners]) {
          // Skips a subscriber that another listener removed during this event's delivery.
          if (stream.listeners.has(listener)) callListener(listener, event, this.onListenerError);
        }
      }
    } finally {
      stream.delivering = false;
    }
  }
}

/** The first seq of a sequence started at `now` (ms): the wall clock in microseconds, at least 1. */
function freshStart(now: number): number {
  return Math.max(1, Math.floor(now * 1000));
}

function key(tenantId: string, sessionId: string): string {
  // JSON keeps the pair unambiguous whatever characters the ids contain.
  return JSON.stringify([tenantId, sessionId]);
}

function closedError(): Error {
  return new Error('InProcessEventBus is closed');
}
