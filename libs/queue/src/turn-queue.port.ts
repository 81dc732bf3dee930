// The TurnQueue port: how a started run reaches whatever executes it. Embedded: the inline adapter runs it in
// this process right away. Distributed: a BullMQ adapter (job id = run id) lets any worker take it. Either way the
// trace context of whoever enqueued a run (OpenTelemetry on) is the one its execution runs in.

import type { TraceCarrier } from '@canopy/common';

export interface RunJob {
  tenantId: string;
  sessionId: string;
  runId: string;
  /**
   * Which execution of the run: absent for its start, the step of the pause it continues from for a resume. A
   * paused run's job has completed; the resume is a job of its own (same run, another job id).
   */
  resumedAt?: number;
  /** The enqueuer's trace context: set by the queue at enqueue when OpenTelemetry is on. */
  trace?: TraceCarrier;
}

export type RunHandler = (job: RunJob) => Promise<void>;

/**
 * Thrown by a run handler that stopped executing a run without ending it because its process is shutting down:
 * the queue gives the run back at once for another process to take (it re-runs from the last commit), without
 * counting a failed attempt.
 */
export class RunHandedBack extends Error {
  constructor(readonly runId: string) {
    super(`run ${runId} handed back (the process is shutting down)`);
    this.name = 'RunHandedBack';
  }
}

/** Told when the queue gives up on a run for good (attempts or stall takeovers exhausted, or no retries). */
export type GiveUpHandler = (job: RunJob, error: unknown) => Promise<void>;

export interface TurnQueue {
  /** True when enqueued runs execute in this process at once (the run can start as `running`). */
  readonly runsInline: boolean;
  /**
   * Hands the run to an executor; resolves once it is accepted (not when it finishes). A job of the same id the
   * queue still holds makes it a no-op; with `replaceEnded`, one the queue has ended (completed or failed) is
   * replaced by a new one (the lost-run sweep queues a run again so).
   */
  enqueue(job: RunJob, options?: { replaceEnded?: boolean }): Promise<void>;
  /**
   * How the queue ended the job of this execution of the run, if it did: `failed` when it gave up on it (attempts
   * or stall takeovers spent), `completed` when a handler returned; null when it holds the job or has none.
   */
  endedJob(job: RunJob): Promise<'failed' | 'completed' | null>;
  /**
   * The runs the queue holds now (waiting, delayed or being executed), for finding runs it lost (a Redis that
   * restarted empty); null when the queue cannot lose runs (inline).
   */
  heldRuns(): Promise<Set<string> | null>;
  /** Registers the executor. Exactly one handler per process. */
  process(handler: RunHandler, giveUp: GiveUpHandler): void;
  /**
   * Stops taking runs and waits up to graceMs for the ones in flight; past that, `handBack` makes the handlers
   * stop the rest (they throw RunHandedBack) and the queue gives them to another process.
   */
  close(graceMs?: number, handBack?: () => Promise<void>): Promise<void>;
}

export const TURN_QUEUE = Symbol('TURN_QUEUE');
