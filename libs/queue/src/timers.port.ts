// Timers: work that must happen later even if every process restarts meanwhile. Embedded, they are in-process
// timers (on boot the engine sets again the ones it can derive from the store); distributed, they are delayed
// BullMQ jobs any worker runs. A timer has a deterministic key: setting it again moves it (the last set wins),
// and it fires at most once per set. Handlers re-check the state they act on: a timer that fires after what it
// guarded has changed does nothing.

/** A live session had no controller and no run: shut it down across the deployment (if that is still so). */
export interface IdleTimer {
  kind: 'session-idle';
  tenantId: string;
  sessionId: string;
}

/** A paused run's decisions were not given in time: reject the ones still awaited (if the run still waits). */
export interface DecisionTimer {
  kind: 'decision-expiry';
  tenantId: string;
  sessionId: string;
  runId: string;
  /** The tool uses awaiting a decision when the run paused. */
  toolUseIds: string[];
}

/**
 * The retention sweep: deletes, in every tenant with a retention policy, the sessions not updated for longer than it
 * allows. A repeating timer: one per deployment, whichever process runs it.
 */
export interface RetentionTimer {
  kind: 'retention-sweep';
}

export type Timer = IdleTimer | DecisionTimer | RetentionTimer;
export type TimerKind = Timer['kind'];

export type TimerHandlers = { [K in TimerKind]: (timer: Extract<Timer, { kind: K }>) => Promise<void> };

export interface Timers {
  /** Sets the timer to fire after delayMs; a timer with the same key set before is moved (not added twice). */
  set(timer: Timer, delayMs: number): Promise<void>;
  /** Sets the timer unless one with the same key is set already (re-arming on boot without moving it). */
  ensure(timer: Timer, delayMs: number): Promise<void>;
  /**
   * Fires the timer every `everyMs` from now on, once per deployment however many processes ask (asking again
   * replaces the interval): a BullMQ job scheduler when distributed, an interval timer embedded. A firing that is
   * still running when the next one is due is not doubled.
   */
  repeat(timer: RetentionTimer, everyMs: number): Promise<void>;
  /** Removes the timer if it has not fired yet. */
  clear(timer: Timer): Promise<void>;
  /** Registers the handlers (one per kind). Processes that run no timers never call it. */
  process(handlers: TimerHandlers): void;
  /** Stops firing timers here (set timers stay set where they are durable). */
  close(): Promise<void>;
}

export const TIMERS = Symbol('TIMERS');
