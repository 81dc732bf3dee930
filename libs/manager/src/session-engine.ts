// The session engine assembled from its ports, the same way wherever it runs (ManagerModule for the api and the
// worker, the test harness, the benches): one publisher, the live sessions of this process (the manager's, lent to
// the session layer through its LiveSessionHost port), the commands, the population and the processor.

import { SessionPublisher, SessionService, type SessionEngineDeps } from '@canopy/session';
import type { RetentionSweeper } from './catalog/retention-sweeper';
import { LiveSessions } from './live-sessions';
import { SessionManager } from './session-manager.service';
import { SessionProcessor } from './session-processor';

export interface SessionEngine {
  sessions: SessionService;
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
  const sessions = new SessionService(deps, live, publisher);
  const manager = new SessionManager(deps, sessions, live, publisher);
  const processor = new SessionProcessor(deps, sessions, live, retention);
  return { sessions, manager, live, processor };
}
