// The distributed runtime's queue: a run is a BullMQ job (job id = run id) that any worker may take. A worker
// killed mid-run stops renewing its lock; after the lock expires BullMQ marks the job stalled and another worker
// takes it over (a new attempt) — the executor then recovers the run from its last committed state. Only processes
// that call process() (workers) execute runs; api processes only enqueue. A job carries the trace context of the
// request that enqueued it (OpenTelemetry on), and its run executes in that context on the worker.

import { context } from '@opentelemetry/api';
import { Queue, WaitingError, Worker, type ConnectionOptions } from 'bullmq';
import { contextOf, currentTraceCarrier } from '@canopy/common';
import { bullmqPrefix } from './bullmq-prefix';
import { JOBS, checkHandlers, runJobPayload } from './job-catalog';
import {
  RunHandedBack,
  type GiveUpHandler,
  type RunHandler,
  type RunJob,
  type TurnQueue,
} from './turn-queue.port';

export interface BullmqTurnQueueOptions {
  connection: ConnectionOptions;
  /** Key prefix of every BullMQ key (one per deployment, or per test). */
  prefix: string;
  /** Runs one worker process executes at once. */
  concurrency: number;
  /** Overrides the catalog's lock duration (how soon a dead worker's run is taken over). */
  lockDurationMs?: number;
  onError?: (err: unknown, job: RunJob | null) => void;
}

/** How long handing runs back may take before the worker is force-closed. */
const HAND_BACK_MS = 5_000;

export class BullmqTurnQueue implements TurnQueue {
  readonly runsInline = false;
  private readonly queue: Queue;
  private worker: Worker | null = null;

  private get lockMs(): number {
    return this.options.lockDurationMs ?? JOBS.run.lockDurationMs;
  }

  constructor(private readonly options: BullmqTurnQueueOptions) {
    this.queue = new Queue(JOBS.run.queue, {
      connection: options.connection,
      prefix: bullmqPrefix(options.prefix, options.connection),
    });
  }

  async enqueue(job: RunJob, options: { replaceEnded?: boolean } = {}): Promise<void> {
    const trace = job.trace ?? currentTraceCarrier();
    const payload = runJobPayload.parse(trace ? { ...job, trace } : job);
    if (options.replaceEnded) {
      // BullMQ ignores an add whose job id it still keeps, finished jobs included (kept for removeOnComplete /
      // removeOnFail): the ended job goes first. One being executed cannot be removed (its lock): left alone.
      const id = JOBS.run.jobId(payload);
      const state = await this.queue.getJobState(id);
      if (state === 'completed' || state === 'failed') await this.queue.remove(id);
    }
    await this.queue.add(JOBS.run.name, payload, {
      jobId: JOBS.run.jobId(payload),
      attempts: JOBS.run.attempts,
      backoff: { type: 'exponential', delay: JOBS.run.backoffMs },
      removeOnComplete: { age: 3_600, count: 10_000 },
      removeOnFail: { age: 24 * 3_600 },
    });
  }

  async endedJob(job: RunJob): Promise<'failed' | 'completed' | null> {
    const state = await this.queue.getJobState(JOBS.run.jobId(runJobPayload.parse(job)));
    return state === 'failed' || state === 'completed' ? state : null;
  }

  async heldRuns(): Promise<Set<string>> {
    const jobs = await this.queue.getJobs(['active', 'waiting', 'delayed', 'prioritized', 'wait']);
    return new Set(jobs.filter((j) => j?.data).map((j) => (j.data as RunJob).runId));
  }

  process(handler: RunHandler, giveUp: GiveUpHandler): void {
    if (this.worker) throw new Error('the turn queue already has a handler');
    checkHandlers(JOBS.run.queue, [JOBS.run.name]);
    this.worker = new Worker(
      JOBS.run.queue,
      async (job, token) => {
        if (job.name !== JOBS.run.name) throw new Error(`unknown job ${job.name}`);
        try {
          const run = runJobPayload.parse(job.data);
          await (run.trace ? context.with(contextOf(run.trace), () => handler(run)) : handler(run));
        } catch (err) {
          if (!(err instanceof RunHandedBack) || !token) throw err;
          // Back to waiting for another worker, now rather than after the lock lapses; not a failed attempt.
          await job.moveToWait(token);
          throw new WaitingError();
        }
      },
      {
        connection: this.options.connection,
        prefix: bullmqPrefix(this.options.prefix, this.options.connection),
        concurrency: this.options.concurrency,
        lockDuration: this.lockMs,
        stalledInterval: Math.max(250, Math.floor(this.lockMs / 2)),
        maxStalledCount: JOBS.run.attempts - 1,
      },
    );
    this.worker.on('failed', (job, err) => {
      const data = job ? (job.data as RunJob) : null;
      this.options.onError?.(err, data);
      if (!job || !data) return;
      // Final when its attempts are spent, or when it stalled more often than allowed (BullMQ fails it then).
      void job
        .isFailed()
        .then((final) => (final ? giveUp(data, err) : undefined))
        .catch((e: unknown) => this.options.onError?.(e, data));
    });
    this.worker.on('error', (err) => this.options.onError?.(err, null));
  }

  /**
   * Stops taking runs; waits for the ones in flight up to graceMs, then hands the rest back (their handlers stop
   * and the jobs go back to waiting). Whatever is still held after that is force-closed: its lock lapses and
   * another worker takes it over as after a crash.
   */
  async close(graceMs = 10_000, handBack?: () => Promise<void>): Promise<void> {
    if (this.worker) {
      const closed = this.worker.close();
      if (!(await settlesWithin(closed, graceMs)) && handBack) {
        await handBack();
        await settlesWithin(closed, HAND_BACK_MS);
      }
      await this.worker.close(true).catch(() => undefined);
    }
    await this.queue.close();
  }
}

/** True when the promise settled within ms. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((r) => {
      timer = setTimeout(() => r(false), ms);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
  return settled;
}
