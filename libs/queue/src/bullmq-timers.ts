// The distributed runtime's timers: delayed BullMQ jobs (job id = the timer's key) on their own queue, run by
// whichever worker is up when they are due, so they survive restarts of every process. Setting a timer again moves
// its delayed job (BullMQ's changeDelay: one script of ~10 commands, where removing the job and adding it anew took
// ~30; an idle session's timer is set again after every run); a job that is not delayed any more (due, or gone) is
// removed and added anew; a timer firing meanwhile is not removed (it is running) and its handler re-checks the state
// it acts on. Failed handlers are retried per the catalog, then dropped.

import { Job, Queue, Worker, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { bullmqPrefix } from './bullmq-prefix';
import {
  JOBS,
  checkHandlers,
  decisionTimerPayload,
  idleTimerPayload,
  retentionTimerPayload,
} from './job-catalog';
import { dispatchTimer, timerKey } from './timer-jobs';
import type { RetentionTimer, Timer, TimerHandlers, Timers } from './timers.port';

export interface BullmqTimersOptions {
  connection: ConnectionOptions;
  /** Key prefix of every BullMQ key (one per deployment, or per test). */
  prefix: string;
  /** Timers one worker process runs at once. */
  concurrency?: number;
  onError?: (err: unknown, timer: Timer | null) => void;
}

const QUEUE = JOBS.sessionIdle.queue;

export class BullmqTimers implements Timers {
  private readonly queue: Queue;
  private worker: Worker | null = null;

  constructor(private readonly options: BullmqTimersOptions) {
    this.queue = new Queue(QUEUE, {
      connection: options.connection,
      prefix: bullmqPrefix(options.prefix, options.connection),
    });
  }

  async set(timer: Timer, delayMs: number): Promise<void> {
    const key = timerKey(timer);
    const delay = Math.max(0, Math.round(delayMs));
    try {
      // The job's payload is the timer's, which its key names: only its time changes.
      await new Job(this.queue, specOf(timer).name, timer, {}, key).changeDelay(delay);
      return;
    } catch {
      // Not a delayed job (none yet, due or running): set it as new.
    }
    // A waiting job is removed; a running one is locked and stays (the add below is then a no-op).
    await this.queue.remove(key).catch(() => 0);
    await this.add(timer, key, delay);
  }

  async ensure(timer: Timer, delayMs: number): Promise<void> {
    await this.add(timer, timerKey(timer), delayMs);
  }

  async repeat(timer: RetentionTimer, everyMs: number): Promise<void> {
    // A job scheduler (BullMQ's repeatable job): one per id in the deployment; upserting it again from another
    // process, or at the next start, replaces its interval rather than adding a second one.
    const spec = JOBS.retentionSweep;
    await this.queue.upsertJobScheduler(
      spec.jobId(),
      { every: Math.max(1, Math.round(everyMs)) },
      {
        name: spec.name,
        data: retentionTimerPayload.parse(timer),
        opts: { attempts: spec.attempts, removeOnComplete: true, removeOnFail: true },
      },
    );
  }

  async clear(timer: Timer): Promise<void> {
    await this.queue.remove(timerKey(timer)).catch(() => 0);
  }

  process(handlers: TimerHandlers): void {
    if (this.worker) throw new Error('the timers already have handlers');
    checkHandlers(QUEUE, Object.keys(handlers));
    this.worker = new Worker(QUEUE, async (job) => dispatchTimer(handlers, parse(job.name, job.data)), {
      connection: this.options.connection,
      prefix: bullmqPrefix(this.options.prefix, this.options.connection),
      concurrency: this.options.concurrency ?? 8,
      lockDuration: JOBS.sessionIdle.lockDurationMs,
    });
    this.worker.on('failed', (job, err) => {
      let timer: Timer | null = null;
      try {
        timer = job ? parse(job.name, job.data) : null;
      } catch {
        // an unparseable payload: reported without it
      }
      this.options.onError?.(err, timer);
    });
    this.worker.on('error', (err) => this.options.onError?.(err, null));
  }

  async close(): Promise<void> {
    await this.worker?.close();
    await this.queue.close();
  }

  private async add(timer: Timer, key: string, delayMs: number): Promise<void> {
    const spec = specOf(timer);
    const opts: JobsOptions = {
      jobId: key,
      delay: Math.max(0, Math.round(delayMs)),
      attempts: spec.attempts,
      backoff: { type: 'exponential', delay: spec.backoffMs },
      // Gone once done, so the same key can be set again.
      removeOnComplete: true,
      removeOnFail: true,
    };
    await this.queue.add(spec.name, parse(spec.name, timer), opts);
  }
}

function specOf(timer: Timer) {
  return timer.kind === 'session-idle'
    ? JOBS.sessionIdle
    : timer.kind === 'decision-expiry'
      ? JOBS.decisionExpiry
      : JOBS.retentionSweep;
}

function parse(name: string, data: unknown): Timer {
  if (name === JOBS.sessionIdle.name) return idleTimerPayload.parse(data);
  if (name === JOBS.decisionExpiry.name) return decisionTimerPayload.parse(data);
  if (name === JOBS.retentionSweep.name) return retentionTimerPayload.parse(data);
  throw new Error(`unknown timer job ${name}`);
}
