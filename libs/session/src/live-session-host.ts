// The port the session engine needs from the layer that holds the population of live sessions (the manager): a
// session's live instance here, opened if needed, and word of where its runs execute. Declared here and
// implemented above, so imports point down only.

import type { SessionRecord } from '@canopy/store';
import type { KnownState, LiveSession } from './live-session';

export interface LiveSessionHost {
  /** The session's live instance in this process, if it is live here. */
  get(tenantId: string, id: string): LiveSession | undefined;
  /** The live session, opened if needed (concurrent opens share one; from `known` state when given). Null: unknown. */
  open(tenantId: string, id: string, known?: KnownState): Promise<LiveSession | null>;
  /** A run started (`running`) or stopped executing in this process. */
  runHere(tenantId: string, sessionId: string, runId: string, running: boolean): void;
  /** A run of a session not live here executes here: announce this process as its worker; answers how to withdraw. */
  workerPresence(session: SessionRecord): () => Promise<void>;
}

export const LIVE_SESSION_HOST = Symbol('LIVE_SESSION_HOST');
