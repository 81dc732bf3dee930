// Runs that nothing will finish: those a dead process left behind (ended at start-up as interrupted) and those
// the queue gave up on (past their attempt budget). Either ends as an error under the system scope, a branch that
// never committed rolls back, and the session is idle again. Paused runs are not abandoned: they wait for their
// decisions, whose expiries are set again at start-up.

import { systemScope } from '@canopy/core';
import type { Decisions } from './decisions';
import type { RunExecutor } from './run-executor';
import type { SessionEngineDeps } from './session-deps';

export class RunRecovery {
  constructor(
    private readonly deps: SessionEngineDeps,
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
   * branches that never committed, so no session stays busy. Paused runs wait for their decisions.
   */
  async recoverInterruptedRuns(): Promise<number> {
    // With a shared queue, another worker may be executing any of them: stalled jobs are the queue's to recover.
    if (!this.deps.queue.runsInline) return 0;
    const runs = await this.deps.store.unfinishedRuns();
    let recovered = 0;
    for (const r of runs) {
      if (r.status === 'paused' || this.executor.isRunning(r.runId)) continue;
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
