// The session layer assembled from its ports: the commands (SessionService) and a process's duties for the runs it
// executes (RunDuties), over one executor, one set of decisions and one recovery.

import { Decisions } from './decisions';
import type { LiveSessionHost } from './live-session-host';
import { RunDuties } from './run-duties';
import { RunExecutor } from './run-executor';
import { RunRecovery } from './run-recovery';
import type { SessionEngineDeps } from './session-deps';
import type { SessionPublisher } from './session-publisher';
import { SessionService } from './session.service';

export interface SessionLayer {
  sessions: SessionService;
  duties: RunDuties;
}

export function createSessionLayer(
  deps: SessionEngineDeps,
  live: LiveSessionHost,
  publisher: SessionPublisher,
): SessionLayer {
  const decisions = new Decisions(deps, publisher);
  const executor = new RunExecutor(deps, publisher, live, decisions);
  const recovery = new RunRecovery(deps, executor, decisions);
  const sessions = new SessionService(deps, live, publisher, { executor, decisions });
  const duties = new RunDuties(deps, {
    executor,
    decisions,
    recovery,
    startQueuedPrompts: () => sessions.startQueuedPrompts(),
  });
  return { sessions, duties };
}
