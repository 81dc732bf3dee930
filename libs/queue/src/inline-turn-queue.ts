// The embedded runtime's queue: runs execute in this process, started on the next tick so the command that
// enqueued them returns first (in the enqueuer's trace context, as a worker would). Failures of a handler are
// reported, never thrown into the caller.

import { context } from '@opentelemetry/api';
import { contextOf, currentTraceCarrier } from '@canopy/common';
import { JOBS } from './job-catalog';
import type { GiveUpHandler, RunHandler, RunJob, TurnQueue } from './turn-queue.port';

export class InlineTurnQueue implements TurnQueue {
  readonly runsInline = true;
  private handler: RunHandler | null = null;
  private giveUp: GiveUpHandler | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  /** Jobs queued or executing: the same job enqueued again meanwhile is not run twice (as job ids do in BullMQ). */
  private readonly pendingRuns = new Set<string>();
  private closed = false;

  constructor(private readonly onError: (err: unknown, job: RunJob) => void = () => undefined) {}

  heldRuns(): Promise<Set<string> | null> {
    return Promise.resolve(null);
  }

  /** Nothing ends a job here but its handler, which ends the run itself (or gives it up). */
  endedJob(): Promise<'failed' | 'completed' | null> {
    return Promise.resolve(null);
  }

  process(handler: RunHandler, giveUp: GiveUpHandler): void {
    if (this.handler) throw new Error('the turn queue already has a handler');
    this.handler = handler;
    this.giveUp = giveUp;
  }

  enqueue(job: RunJob): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the turn queue is closed'));
    const handler = this.handler;
    if (!handler) return Promise.reject(new Error('no run handler registered'));
    const id = JOBS.run.jobId(job);
    if (this.pendingRuns.has(id)) return Promise.resolve();
    this.pendingRuns.add(id);
    const trace = job.trace ?? currentTraceCarrier();
    const run = trace ? { ...job, trace } : job;
    const task: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => (trace ? context.with(contextOf(trace), () => handler(run)) : handler(run)))
      .catch(async (err: unknown) => {
        // No retries in process: a run whose execution threw is given up at once.
        this.report(err, job);
        await this.giveUp?.(job, err).catch((e: unknown) => this.report(e, job));
      })
      .finally(() => {
        this.inFlight.delete(task);
        this.pendingRuns.delete(id);
      });
    this.inFlight.add(task);
    return Promise.resolve();
  }

  /** The error reporter must not turn a failed run into an unhandled rejection. */
  private report(err: unknown, job: RunJob): void {
    try {
      this.onError(err, job);
    } catch {
      // ignored: reporting is best effort
    }
  }

  get size(): number {
    return this.inFlight.size;
  }

  async close(graceMs = 10_000): Promise<void> {
    this.closed = true;
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inFlight]),
      new Promise((r) => {
        timer = setTimeout(r, graceMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }
}
