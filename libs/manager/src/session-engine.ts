// The session engine assembled from its ports, the same way wherever it runs (ManagerModule for the api and the
// worker, the test harness, the benches): one publisher, the live sessions of this process (the manager's, lent to
// the session layer through its LiveSessionHost port), the commands and the run duties, the population and the
// processor.

import {
  SessionPublisher,
  createSessionLayer,
  type RunDuties,
  type SessionEngineDeps,
  type SessionService,
} from '@canopy/session';
import type { RetentionSweeper } from './catalog/retention-sweeper';
import { LiveSessions } from './live-sessions';
import { SessionManager } from './session-manager.service';
import { SessionProcessor } from './session-processor';

export interface SessionEngine {
  sessions: SessionService;
  /** What this process does for the runs it executes (execution, sweeps, recovery, stop). */
  duties: RunDuties;
  manager: SessionManager;
  live: LiveSessions;
  processor: SessionProcessor;
}

export function createSessionEngine(
  deps: SessionEngineDeps,
  retention: RetentionSweeper | null = null,
): SessionEngine {
  const publisher = new SessionPublisher(deps.bus, deps.feed, deps.logger);
  const live = new LiveSessions(deps, publisher);
  const { sessions, duties } = createSessionLayer(deps, live, publisher);
  const manager = new SessionManager(deps, sessions, duties, live, publisher);
  const processor = new SessionProcessor(deps, duties, live, retention);
  return { sessions, duties, manager, live, processor };
}
