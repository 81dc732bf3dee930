// The TurnQueue port: how a started run reaches whatever executes it. Embedded: the inline adapter runs it in
// this process right away. Distributed: a BullMQ adapter (job id = run id) lets any worker take it.

export interface RunJob {
  tenantId: string;
  sessionId: string;
  runId: string;
}

export type RunHandler = (job: RunJob) => Promise<void>;

/** Told when the queue gives up on a run for good (attempts or stall takeovers exhausted, or no retries). */
export type GiveUpHandler = (job: RunJob, error: unknown) => Promise<void>;

export interface TurnQueue {
  /** True when enqueued runs execute in this process at once (the run can start as `running`). */
  readonly runsInline: boolean;
  /** Hands the run to an executor; resolves once it is accepted (not when it finishes). */
  enqueue(job: RunJob): Promise<void>;
  /** Registers the executor. Exactly one handler per process. */
  process(handler: RunHandler, giveUp: GiveUpHandler): void;
  /** Stops taking runs and waits (up to graceMs) for the ones in flight. */
  close(graceMs?: number): Promise<void>;
}

export const TURN_QUEUE = Symbol('TURN_QUEUE');
