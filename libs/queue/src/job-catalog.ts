// Every job Canopy runs on BullMQ, in one place: its queue, payload schema, attempts, backoff and
// how long a worker may hold it before it counts as stalled. Job ids are deterministic (a run's job id is the run
// id) so a retried enqueue never runs the same work twice. A worker must register a handler for every job of the
// queues it serves, and only those: start-up fails otherwise.

import { z } from 'zod';
import { timerKey } from './timer-jobs';

/** A W3C trace context (OpenTelemetry on): the span that enqueued a job is the parent of its execution's spans. */
export const traceCarrierPayload = z.object({
  traceparent: z.string().regex(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/),
  tracestate: z.string().max(512).optional(),
});

export const runJobPayload = z.object({
  tenantId: z.uuid(),
  sessionId: z.string().min(1).max(128),
  runId: z.uuid(),
  resumedAt: z.number().int().min(0).optional(),
  trace: traceCarrierPayload.optional(),
});

export const idleTimerPayload = z.object({
  kind: z.literal('session-idle'),
  tenantId: z.uuid(),
  sessionId: z.string().min(1).max(128),
});

export const decisionTimerPayload = z.object({
  kind: z.literal('decision-expiry'),
  tenantId: z.uuid(),
  sessionId: z.string().min(1).max(128),
  runId: z.uuid(),
  toolUseIds: z.array(z.string().min(1).max(256)).min(1).max(256),
});

export const retentionTimerPayload = z.object({ kind: z.literal('retention-sweep') });

export interface JobSpec<P extends z.ZodType> {
  name: string;
  queue: string;
  payload: P;
  /** Attempts in all (the first one included): a run taken over after a crash is a new attempt. */
  attempts: number;
  backoffMs: number;
  /** A worker that stops renewing its lock for this long is presumed dead; the job is taken over. */
  lockDurationMs: number;
  /** Deterministic job id from the payload. */
  jobId(payload: z.infer<P>): string;
}

export const JOBS = {
  run: {
    name: 'run',
    queue: 'canopy-runs',
    payload: runJobPayload,
    attempts: 3,
    backoffMs: 1_000,
    lockDurationMs: 15_000,
    jobId: (p) => (p.resumedAt === undefined ? p.runId : `${p.runId}-resume-${p.resumedAt}`),
  } satisfies JobSpec<typeof runJobPayload>,
  /** Idle shutdown of a live session (a delayed job, moved each time the session becomes idle again). */
  sessionIdle: {
    name: 'session-idle',
    queue: 'canopy-timers',
    payload: idleTimerPayload,
    attempts: 3,
    backoffMs: 1_000,
    lockDurationMs: 30_000,
    jobId: (p) => timerKey(p),
  } satisfies JobSpec<typeof idleTimerPayload>,
  /** Expiry of a paused run's decisions (a delayed job per pause). */
  decisionExpiry: {
    name: 'decision-expiry',
    queue: 'canopy-timers',
    payload: decisionTimerPayload,
    attempts: 3,
    backoffMs: 1_000,
    lockDurationMs: 30_000,
    jobId: (p) => timerKey(p),
  } satisfies JobSpec<typeof decisionTimerPayload>,
  /**
   * The retention sweep (a repeatable job: one scheduler per deployment, its interval RETENTION_SWEEP_INTERVAL_MS).
   * Not retried: the next firing does what this one could not.
   */
  retentionSweep: {
    name: 'retention-sweep',
    queue: 'canopy-timers',
    payload: retentionTimerPayload,
    attempts: 1,
    backoffMs: 1_000,
    lockDurationMs: 30_000,
    jobId: () => 'retention-sweep',
  } satisfies JobSpec<typeof retentionTimerPayload>,
} as const;

export type JobName = keyof typeof JOBS;

/** Fails fast when handlers and the catalog disagree (a job without a handler, or a handler for no job). */
export function checkHandlers(queue: string, handlers: readonly string[]): void {
  const expected = Object.values(JOBS)
    .filter((j) => j.queue === queue)
    .map((j) => j.name)
    .sort();
  const given = [...handlers].sort();
  const missing = expected.filter((n) => !given.includes(n));
  const unknown = given.filter((n) => !expected.includes(n));
  const dup = given.filter((n, i) => given.indexOf(n) !== i);
  if (missing.length || unknown.length || dup.length) {
    throw new Error(
      `job handlers for queue ${queue} do not match the catalog: ` +
        [
          missing.length ? `missing ${missing.join(', ')}` : '',
          unknown.length ? `unknown ${unknown.join(', ')}` : '',
          dup.length ? `twice ${dup.join(', ')}` : '',
        ]
          .filter(Boolean)
          .join('; '),
    );
  }
}
