// The shapes of the API's answers (API.md), on the shared types of @canopy/core.

import type {
  Actor,
  LiveEntry as CoreLiveEntry,
  RunStats,
  ClientTool,
  InFlight,
  Message,
  MessageContent,
  NodeId,
  RunKind,
  RunStatus,
  SessionInfo,
  Usage,
} from '@canopy/core';
import type { SessionFilter } from './catalog-types';

export interface Tenant {
  id: string;
  name: string;
  /** Shown once, at creation. */
  apiKey: string;
}

export interface ApiKey {
  id: string;
  apiKey: string;
}

export interface UserToken {
  token: string;
  expiresAt: string;
}

export interface CreateSessionInput {
  id?: string;
  title?: string | null;
  model: string;
  system?: string | null;
  opts?: Record<string, unknown>;
  tools?: ClientTool[];
  metadata?: Record<string, unknown>;
  userId?: string;
  idleShutdownAfterMs?: number;
}

export interface UpdateSessionInput {
  title?: string | null;
  /** Exempt from the tenant's retention policy (unless it keeps nothing). */
  pinned?: boolean;
  model?: string;
  system?: string | null;
  opts?: Record<string, unknown>;
  tools?: ClientTool[];
  metadata?: Record<string, unknown>;
}

export interface ListSessionsQuery extends SessionFilter {
  limit?: number;
  cursor?: string;
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

export interface SessionDetail extends SessionInfo {
  head: NodeId | null;
  path: NodeId[];
  usage: Usage;
  live?: { controllers: number; observers: number };
  /** The run in flight: its uncommitted messages, the one being streamed, the tool uses awaiting a decision. */
  inFlight?: Pick<InFlight, 'runId' | 'pending' | 'partial' | 'awaiting'>;
  /** Prompts waiting for their turn (`ifBusy` enqueue, interrupt, rollback), in the order they will run. */
  queued: QueuedPrompt[];
}

/** A prompt in a session's queue; the run that takes it will have its `id`. */
export interface QueuedPrompt {
  id: string;
  mode: 'enqueue' | 'interrupt' | 'rollback';
  content: MessageContent;
  createdAt: string;
}

export interface OpenSessionInput {
  /** Used only when the persisted model cannot be (the persisted one wins while usable). */
  model?: string;
  /** Replaces the persisted system prompt. */
  system?: string | null;
  /** Replaces the persisted opts. */
  opts?: Record<string, unknown>;
  /** `controller` (default) applies the start options; `observer` opens the session as it is (no options). */
  mode?: 'controller' | 'observer';
}

/** POST /v1/sessions/:id/open's answer. */
export interface OpenedSession {
  session: SessionDetail;
  /** `started`: the open made the session live; `existing`: it was live already. */
  opened: 'started' | 'existing';
  /** Which side each reconciled field came from. */
  resolution: { model: 'persisted' | 'start'; system: 'persisted' | 'start'; opts: 'persisted' | 'start' };
  /** Subscribe with `after: seq` to get every event after the open. */
  seq: number;
}

export interface NodeView {
  id: NodeId;
  parentId: NodeId | null;
  message: Message;
  usage: Usage | null;
  createdAt: string;
}

export interface TreeView {
  nodes: NodeView[];
  path: NodeId[];
  cursors: Record<string, NodeId>;
  roots: NodeId[];
  head: NodeId | null;
  usage: Usage;
}

export interface RunInfo {
  id: string;
  sessionId: string;
  kind: RunKind;
  status: RunStatus;
  error?: { code: string; message: string };
  usage: Usage;
  /** Executions so far (more than 1 after a takeover or a hand-back). */
  attempts: number;
  /** Who started the run (a key, an end user, the admin, the system); null for runs from before actors. */
  actor: Actor | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** A prompt waiting in its session's queue (`status: "queued"`, its run not started): its place, 1 being next. */
  position?: number;
  /** A prompt waiting in its session's queue: how it was queued (its `ifBusy`). */
  mode?: 'enqueue' | 'interrupt' | 'rollback';
}

/** A live session as GET /v1/live answers it; `tenantId` only in the admin key's view (every tenant's sessions). */
export type LiveEntry = Omit<CoreLiveEntry, 'tenantId'> & { tenantId?: string };

/**
 * A command's answer: the run it started (`staged`: a steer prompt folded into the busy run; `queued`: a prompt
 * waiting in the session's queue, whose run will have `runId`).
 */
export interface Accepted {
  runId: string;
  staged?: boolean;
  queued?: boolean;
}

export type Decision =
  | { type: 'execute' }
  | { type: 'reject'; reason?: string }
  | { type: 'result'; content: string | Message['content']; isError?: boolean };

export interface PromptOptions {
  /**
   * What to do while a run is in flight: refuse (`session_busy`, the default), steer the busy run, wait in the
   * session's queue (`enqueue`, first in first out), stop the run and go next (`interrupt`: the run keeps its
   * prompt, completed steps and streamed text, the last message marked `interrupted`), or cancel it and go where
   * its prompt was attached (`rollback`: it leaves the active path).
   */
  ifBusy?: 'reject' | 'steer' | 'enqueue' | 'interrupt' | 'rollback';
  maxSteps?: number;
  signal?: AbortSignal;
}

export type { RunStats };
