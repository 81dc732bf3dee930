// What a process does for the runs it executes, beside the commands: it executes the runs the queue hands it (and
// ends those the queue gives up on), aborts the ones cancelled anywhere, expires decisions, sweeps for runs the queue
// lost, recovers at start-up and after a database outage, and stops executing within the shutdown grace period.
// The processor (libs/manager) registers these where runs execute; the commands are SessionService's.

import type { CancelReason, DecisionTimer, RunJob } from '@canopy/queue';
import type { Decisions } from './decisions';
import type { RunExecutor } from './run-executor';
import type { RunRecovery } from './run-recovery';
import type { SessionEngineDeps } from './session-deps';

/** How long after a database outage the runs it left unfinished get to reach the executor (recoverAfterOutage). */
const OUTAGE_SETTLE_MS = 2_000;

/** What the duties use besides the run machinery: the queue and timers they stop, their settings, the log. */
export type RunDutiesDeps = Pick<SessionEngineDeps, 'queue' | 'timers' | 'logger'> & {
  settings: Pick<SessionEngineDeps['settings'], 'lostRunSweepMs' | 'retentionSweepMs' | 'shutdownGraceMs'>;
};

export class RunDuties {
  private lostRunSweep: NodeJS.Timeout | null = null;
  private sweeping = false;
  private stopping: Promise<void> | null = null;

  constructor(
    private readonly deps: RunDutiesDeps,
    private readonly runs: {
      executor: RunExecutor;
      decisions: Decisions;
      recovery: RunRecovery;
      /** Starts the queued prompts of idle sessions (SessionService.startQueuedPrompts). */
      startQueuedPrompts: () => Promise<void>;
    },
  ) {}

  /** Executes a run taken from the queue. */
  executeRun(job: RunJob): Promise<void> {
    return this.runs.executor.execute(job);
  }

  /**
   * A cancel (or an interrupt) was requested anywhere: aborts the run if this process executes it (true when it
   * does).
   */
  abortIfHere(runId: string, reason: CancelReason = 'cancelled'): boolean {
    return this.runs.executor.abortIfHere(runId, reason);
  }

  /** Whether this process executes the run now. */
  isExecuting(runId: string): boolean {
    return this.runs.executor.isRunning(runId);
  }

  /** A paused run's decision expiry fired: the decisions still awaited are rejected. */
  expireDecisions(timer: DecisionTimer): Promise<void> {
    return this.runs.decisions.expire(timer);
  }

  /** Starts the periodic work of a process that executes runs: the retention schedule and the lost-run sweep. */
  startSweeps(): void {
    this.scheduleRetentionSweep();
    const sweepMs = this.deps.settings.lostRunSweepMs;
    if (sweepMs) {
      this.lostRunSweep = setInterval(() => void this.sweepLostRuns(), sweepMs);
      this.lostRunSweep.unref();
    }
  }

  private scheduleRetentionSweep(): void {
    if (!this.deps.settings.retentionSweepMs) return;
    this.deps.timers
      .repeat({ kind: 'retention-sweep' }, this.deps.settings.retentionSweepMs)
      .catch((err: unknown) => this.deps.logger.error('retention sweep not scheduled', { err }));
  }

  /** One pass of the lost-run sweep (see RunRecovery.requeueLostRuns); never throws. */
  async sweepLostRuns(): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    try {
      const requeued = await this.runs.recovery.requeueLostRuns();
      // Queued prompts of sessions a dead process left idle without starting them.
      await this.runs.startQueuedPrompts();
      // The retention schedule lives in Redis too: set again (idempotent) when runs were lost with it.
      if (requeued > 0) this.scheduleRetentionSweep();
      return requeued;
    } catch (err) {
      this.deps.logger.warn('lost-run sweep failed', { err });
      return 0;
    } finally {
      this.sweeping = false;
    }
  }

  /**
   * What a process that executes runs does at start-up: ends runs a dead process left behind, and sets again the
   * decision expiries of paused runs (embedded timers do not survive a restart).
   */
  recover(): Promise<{ interrupted: number; expiries: number }> {
    return this.runs.recovery.recover();
  }

  /** Ends runs a dead process left behind (see RunRecovery); answers how many. */
  recoverInterruptedRuns(): Promise<number> {
    return this.runs.recovery.recoverInterruptedRuns();
  }

  /**
   * What a process that executes runs does when its database is back from an outage (the embedded database
   * restarted): ends the runs the outage left unfinished with nothing executing them (see
   * RunRecovery.recoverAfterOutage), then starts the queued prompts of idle sessions. Never throws.
   */
  async recoverAfterDatabaseOutage(settleMs = OUTAGE_SETTLE_MS): Promise<number> {
    try {
      const ended = await this.runs.recovery.recoverAfterOutage(settleMs);
      if (ended > 0) this.deps.logger.warn('ended runs a database outage interrupted', { runs: ended });
      await this.runs.startQueuedPrompts();
      return ended;
    } catch (err) {
      this.deps.logger.warn('recovery after a database outage failed', { err });
      return 0;
    }
  }

  /** The queue gave up on a run: it ends as an error (see RunRecovery). */
  giveUpRun(tenantId: string, sessionId: string, runId: string, error: unknown): Promise<void> {
    return this.runs.recovery.giveUpRun(tenantId, sessionId, runId, error);
  }

  /**
   * Stops executing runs; the one owner of the shutdown grace period (SHUTDOWN_GRACE_MS). Embedded: runs here get
   * up to the grace period to end, then the rest end as cancelled (branches roll back). A worker stops taking
   * runs, lets the ones in flight finish for up to the grace period, then hands the rest back to the queue for
   * another worker. Timers stop too. Idempotent: every caller waits for the same stop.
   */
  stopExecuting(): Promise<void> {
    this.stopping ??= this.stopRuns();
    return this.stopping;
  }

  private async stopRuns(): Promise<void> {
    if (this.lostRunSweep) clearInterval(this.lostRunSweep);
    const { executor } = this.runs;
    const graceMs = this.deps.settings.shutdownGraceMs;
    if (this.deps.queue.runsInline) {
      const runs = executor.activeRuns;
      if (runs > 0) this.deps.logger.info(`stopping: ${runs} run(s) in flight`);
      const deadline = Date.now() + (graceMs ?? 0);
      while (executor.activeRuns > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      if (executor.activeRuns > 0) {
        this.deps.logger.warn(
          `${executor.activeRuns} run(s) still in flight after the grace period: cancelling`,
        );
      }
      await executor.abortAll('shutdown');
      await this.deps.queue.close();
    } else {
      await this.deps.queue.close(graceMs, () => executor.handBackAll());
    }
    await this.deps.timers.close();
  }
}
