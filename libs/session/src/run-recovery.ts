// Runs that nothing will finish: those a dead process left behind (ended at start-up as interrupted), those an
// outage of the embedded database left without their end (ended once it is back), and those the queue gave up on
// (past their attempt budget). Either ends as an error under the system scope, a branch that
// never committed rolls back, and the session is idle again. Paused runs are not abandoned: they wait for their
// decisions, whose expiries are set again at start-up. Runs the queue lost (Redis restarted without its data:
// jobs, locks and timers gone) are queued again, and the timers set again, by the lost-run sweep.

import { systemScope } from '@canopy/core';
import type { Decisions } from './decisions';
import type { RunExecutor } from './run-executor';
import type { RunStore } from '@canopy/store';
import type { SessionEngineDeps } from './session-deps';

/** What recovery uses: the runs, the queue that holds them, where sessions are live. */
export type RunRecoveryDeps = Pick<SessionEngineDeps, 'queue' | 'registry' | 'logger'> & {
  store: Pick<RunStore, 'getRun' | 'unfinishedRuns'>;
  settings: Pick<SessionEngineDeps['settings'], 'executesRuns' | 'lostRunSweepMs'>;
};

export class RunRecovery {
  /** Runs seen unfinished with no job in the queue: when each was first seen so. */
  private readonly lost = new Map<string, number>();

  constructor(
    private readonly deps: RunRecoveryDeps,
    private readonly executor: RunExecutor,
    private readonly decisions: Decisions,
  ) {}

  /**
   * What a process that executes runs does at start-up: ends runs a dead process left behind, and sets again the
   * decision expiries of paused runs (embedded timers do not survive a restart).
   */
  async recover(): Promise<{ interrupted: number; expiries: number }> {
    if (!this.deps.settings.executesRuns) return { interrupted: 0, expiries: 0 };
    const interrupted = await this.recoverInterruptedRuns();
    const expiries = await this.decisions.rearmExpiries();
    return { interrupted, expiries };
  }

  /**
   * Ends runs a dead process left behind (queued or running with nothing executing them) as errors, rolling back
   * branches that never committed, so no session stays busy. Paused runs wait for their decisions. `only`: these
   * runs alone.
   */
  async recoverInterruptedRuns(only?: ReadonlySet<string>): Promise<number> {
    // With a shared queue, another worker may be executing any of them: stalled jobs are the queue's to recover.
    if (!this.deps.queue.runsInline) return 0;
    const runs = await this.deps.store.unfinishedRuns();
    let recovered = 0;
    for (const r of runs) {
      if (r.status === 'paused' || this.executor.isRunning(r.runId)) continue;
      if (only && !only.has(r.runId)) continue;
      const scope = systemScope(r.tenantId);
      const run = await this.deps.store.getRun(scope, r.runId);
      if (!run) continue;
      await this.executor.endRun(
        scope,
        { id: r.sessionId },
        run,
        'error',
        { code: 'interrupted', message: 'the run was interrupted (the process running it stopped)' },
        [],
        run.usage,
        false,
      );
      recovered++;
    }
    return recovered;
  }

  /**
   * After the database came back from an outage (the embedded database restarted): the runs executing here when
   * it went down could not write their end, and a run being started then may never have reached the executor;
   * either leaves its session busy with nothing to end it. The runs unfinished now that nothing executes here are
   * noted, and those of them still unfinished with nothing executing them settleMs later (a run being started
   * reaches the executor within that) end as interrupted, as at start-up. Answers how many.
   */
  async recoverAfterOutage(settleMs: number): Promise<number> {
    if (!this.deps.settings.executesRuns || !this.deps.queue.runsInline) return 0;
    const candidates = new Set(
      (await this.deps.store.unfinishedRuns())
        .filter((r) => r.status !== 'paused' && !this.executor.isRunning(r.runId))
        .map((r) => r.runId),
    );
    if (candidates.size === 0) return 0;
    await new Promise((r) => setTimeout(r, settleMs));
    return this.recoverInterruptedRuns(candidates);
  }

  /**
   * Deals with the runs the queue lost: unfinished in the database, not executing here, and held by no job (waiting,
   * delayed or active) for at least lostRunSweepMs (a run being started is queued within that). One whose job the
   * queue failed (its attempts or stall takeovers spent) while whoever failed it did not live to end the run is
   * given up now, as that process would have. The others (their job gone with a Redis that lost its data, or
   * ended without the run ending) are queued again, unless running with a process naming itself their worker in
   * the live registry: a new execution takes the run over from its last commit (commits are fenced, so nothing is
   * written twice), or ends it past its attempts. When any was queued again, the decision expiries of paused runs
   * are set again too (Redis lost its data). Answers how many runs it queued again or gave up.
   */
  async requeueLostRuns(now = Date.now()): Promise<number> {
    const confirmMs = this.deps.settings.lostRunSweepMs;
    if (!confirmMs || !this.deps.settings.executesRuns) return 0;
    const held = await this.deps.queue.heldRuns();
    if (!held) return 0;
    const runs = await this.deps.store.unfinishedRuns();
    const stillLost = new Set<string>();
    let requeued = 0;
    let givenUp = 0;
    for (const r of runs) {
      if (r.status === 'paused' || held.has(r.runId) || this.executor.isRunning(r.runId)) continue;
      stillLost.add(r.runId);
      const since = this.lost.get(r.runId) ?? now;
      this.lost.set(r.runId, since);
      if (now - since < confirmMs) continue;
      const job = { tenantId: r.tenantId, sessionId: r.sessionId, runId: r.runId };
      const ended = await this.deps.queue.endedJob(job);
      if (ended === 'failed') {
        // Its job is failed for good: the worker that failed it (on its attempts or stalls) died before it ended
        // the run. A job queued again would only be a further attempt past the budget.
        await this.giveUpRun(
          r.tenantId,
          r.sessionId,
          r.runId,
          new Error('its job failed and nothing ended it'),
        );
        givenUp++;
      } else {
        if (r.status === 'running') {
          // A live worker still executing it (its job gone with Redis) finishes it itself.
          const entry = await this.deps.registry.get(r.tenantId, r.sessionId).catch(() => null);
          if (entry?.where.worker) continue;
        }
        await this.deps.queue.enqueue(job, { replaceEnded: ended === 'completed' });
        requeued++;
      }
      this.lost.delete(r.runId);
      stillLost.delete(r.runId);
    }
    for (const runId of [...this.lost.keys()]) if (!stillLost.has(runId)) this.lost.delete(runId);
    if (givenUp > 0)
      this.deps.logger.warn('ended runs whose failed job nothing had ended', { runs: givenUp });
    if (requeued > 0) {
      this.deps.logger.warn('queued again runs the queue had lost', { runs: requeued });
      await this.decisions.rearmExpiries();
    }
    return requeued + givenUp;
  }

  /**
   * The queue gave up on a run (its executions kept failing, or its workers kept dying): it ends as an error,
   * a branch that never committed rolls back, and the session is idle again. Nothing if it already ended.
   */
  async giveUpRun(tenantId: string, sessionId: string, runId: string, error: unknown): Promise<void> {
    const scope = systemScope(tenantId);
    const run = await this.deps.store.getRun(scope, runId);
    if (!run || !['queued', 'running'].includes(run.status)) return;
    const message = error instanceof Error ? error.message : String(error);
    await this.executor.endRun(
      scope,
      { id: sessionId },
      run,
      'error',
      { code: 'interrupted', message: `the run could not be completed: ${message}` },
      [],
      run.usage,
      false,
    );
  }
}
