// Where this process takes work: every process hears closes decided anywhere (its live sessions end); a process
// that executes runs (the embedded api, workers) also takes runs from the queue, hears cancels, fires the durable
// timers (idle shutdown, decision expiry, retention sweep) and runs the periodic sweeps. Registered once at
// start-up (ManagerModule calls it from onApplicationBootstrap), never from a constructor.

import type { RunDuties, SessionEngineDeps } from '@canopy/session';
import type { RetentionSweeper } from './catalog/retention-sweeper';
import type { LiveSessions } from './live-sessions';

export class SessionProcessor {
  private registered = false;

  constructor(
    private readonly deps: SessionEngineDeps,
    private readonly duties: RunDuties,
    private readonly live: LiveSessions,
    private readonly retention: RetentionSweeper | null,
  ) {}

  register(): void {
    if (this.registered) return;
    this.registered = true;
    const { control, queue, timers, settings } = this.deps;
    // Every process serves live sessions: a close decided anywhere ends them here too.
    control.onClose(async (tenantId, id, reason) => {
      await this.live.close(tenantId, id, reason);
    });
    if (!settings.executesRuns) return;
    queue.process(
      (job) => this.duties.executeRun(job),
      (job, error) => this.duties.giveUpRun(job.tenantId, job.sessionId, job.runId, error),
    );
    control.onCancel((runId, reason) => this.duties.abortIfHere(runId, reason));
    timers.process({
      'session-idle': (timer) => this.live.shutDownIfIdle(timer),
      'decision-expiry': (timer) => this.duties.expireDecisions(timer),
      'retention-sweep': async () => {
        await this.retention?.sweep();
      },
    });
    this.duties.startSweeps();
  }
}
