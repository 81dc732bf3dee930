// The SessionStore port: everything the session engine persists, in domain types only (no Prisma). Every
// method takes the Scope; a scope with a userId reaches only that user's sessions (and their runs), and
// anything else answers as if it did not exist. Methods that change a session's status are atomic and
// conditional (compare-and-set on `status` / `active_run_id`), so two commands racing can never both win.

import type {
  Actor,
  ClientTool,
  ContextMeter,
  ContextSummary,
  ConversationSummary,
  Message,
  NodeId,
  RunKind,
  RunStatus,
  Scope,
  SessionStatus,
  TreeNode,
  Usage,
  RunError,
} from '@canopy/core';
import type { SessionFilter } from './session-filters';
import type { QuotaStatus } from './quota-status';
import type { FailedTurn } from './turn-runs';

export type { FailedTurn };

export type JsonObject = { [key: string]: unknown };

/** Where the active path stands, as persisted. */
export interface PositionRecord {
  path: NodeId[];
  cursors: Record<string, NodeId>;
  head: NodeId | null;
}

export interface SessionRecord extends PositionRecord {
  tenantId: string;
  id: string;
  userId: string | null;
  title: string | null;
  model: string;
  system: string | null;
  opts: JsonObject;
  tools: ClientTool[];
  metadata: JsonObject;
  status: SessionStatus;
  /** The id the next committed node takes. */
  nextNodeId: NodeId;
  /** Usage summed over every committed node. */
  usage: Usage;
  idleShutdownAfterMs: number | null;
  /** The run that owns the session while it is busy or paused; null when idle. */
  activeRunId: string | null;
  /** Exempt from the tenant's retention policy (unless it keeps nothing). */
  pinned: boolean;
  /** The token meter after the last run; null before any run was counted. */
  contextMeter: ContextMeter | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface CreateSessionInput {
  /** Explicit id; generated (22-char URL-safe base64 of 16 random bytes) when absent. */
  id?: string;
  title?: string | null;
  model: string;
  system?: string | null;
  opts?: JsonObject;
  tools?: ClientTool[];
  metadata?: JsonObject;
  userId?: string | null;
  idleShutdownAfterMs?: number | null;
}

/** The persistable state of a session; a field left undefined is not changed. */
export interface SessionStatePatch {
  title?: string | null;
  model?: string;
  system?: string | null;
  opts?: JsonObject;
  tools?: ClientTool[];
  metadata?: JsonObject;
  pinned?: boolean;
}

export interface ListSessionsQuery extends SessionFilter {
  /** 1..100. */
  limit: number;
  /** Opaque cursor from a previous page's nextCursor. */
  cursor?: string | null;
}

export interface SessionPage {
  /** Newest updatedAt first (ties: id descending). */
  data: SessionRecord[];
  nextCursor: string | null;
}

export interface RunRecord {
  id: string;
  tenantId: string;
  sessionId: string;
  kind: RunKind;
  status: RunStatus;
  input: JsonObject;
  /** A paused run's state: what resume needs (survives restarts). */
  pending: JsonObject | null;
  /** A prompt staged while the run was busy (`ifBusy: "steer"`), run at the next boundary. */
  steer: JsonObject | null;
  /** The position to restore if the run fails or is cancelled before its first commit (branch runs). */
  rollback: PositionRecord | null;
  error: RunError | null;
  usage: Usage;
  attempts: number;
  /** Who started the run (the scope of startRun); null for runs recorded before actors were. */
  actor: Actor | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface StartRunInput {
  sessionId: string;
  kind: RunKind;
  input: JsonObject;
  /** `running` when the run starts executing at once (inline queue), else `queued`. */
  status: 'queued' | 'running';
  /** A new active path to persist with the start (a branch moves the path to its branch point). */
  position?: PositionRecord;
  /** Saved with the run so any process can roll back (the position before the branch). */
  rollback?: PositionRecord;
  /** Refuse (`rate_limited`) when the tenant has this many busy sessions already (all processes counted). */
  maxBusy?: number;
  /** The run's id (a queued prompt's: a second start of it fails with already_exists); a new one by default. */
  runId?: string;
}

/** A run as its client named it, and where it ended in the tree. */
export interface ClientRunRecord {
  runId: string;
  /** The head the run's last commit left; null when it committed nothing. */
  headNode: NodeId | null;
}

/** How a prompt sent to a busy session waits: in line, or at the front once the run in flight is cancelled. */
export type QueueMode = 'enqueue' | 'interrupt' | 'rollback';

/** A prompt waiting for its turn (ifBusy enqueue, interrupt, rollback); the run that takes it gets its id. */
export interface QueuedPromptRecord {
  id: string;
  mode: QueueMode;
  /** {content, maxSteps?} and, for rollback, the run it cancelled (`cancelledRunId`). */
  input: JsonObject;
  /** Who sent it: its run acts as them. */
  actor: Actor | null;
  createdAt: Date;
}

/** busy: the tenant's other busy sessions as counted for maxBusy (absent when no maxBusy was given). */
export type StartRunResult =
  | { ok: true; run: RunRecord; session: SessionRecord; busy?: number }
  | { ok: false; reason: 'not_found' | 'busy' | 'paused' | 'rate_limited'; busy?: number }
  /** A runs quota of the tenant or of the session's user is used up: which one, with its usage. */
  | { ok: false; reason: 'quota_exceeded'; quota: QuotaStatus; busy?: number };

/** One node to append; ids come from the session's nextNodeId, assigned by the engine. */
export interface NewNode {
  id: NodeId;
  parentId: NodeId | null;
  message: Message;
  usage: Usage | null;
  /** The message's tokens for the session's model (the context policy's count), kept with the node. */
  tokens?: number | null;
}

export interface CommitInput {
  sessionId: string;
  runId: string;
  /** Appended in one statement; empty for a commit that only moves the position. */
  nodes: NewNode[];
  position: PositionRecord;
  /**
   * The path the session row holds before this commit, as the committing run knows it (read at its start or
   * written by its last commit): a position that keeps a prefix of it is sent as that prefix's length and the ids
   * after it, so a long path is not sent and parsed again whole by every commit.
   */
  storedPath?: readonly NodeId[];
  /** The session's nextNodeId after this commit. */
  nextNodeId: NodeId;
  /** Added to the session's usage total (usage of the committed nodes). */
  usage: Usage;
  /**
   * Set on the run's last commit: the session goes idle and the run ends with this status and usage;
   * `firstOutputMs`, the time from the run's creation to its first output, when known (the first recorded stays).
   */
  finish?: { usage: Usage; firstOutputMs?: number };
  /** With finish: the title an untitled session takes when the run ends here (a title set meanwhile wins). */
  title?: string;
  /** With finish: the token meter of the new head, kept with the session when the run ends here. */
  contextMeter?: ContextMeter;
}

export interface EndRunInput {
  sessionId: string;
  runId: string;
  status: 'cancelled' | 'error';
  error?: RunError | null;
  usage: Usage;
  /** Restore this position (a rollback). */
  restore?: PositionRecord | null;
  /**
   * What an interrupted run keeps (`ifBusy: "interrupt"`): its nodes appended and the position moved, as a commit
   * does, in the same transaction that ends the run, so they are written once or, fenced, not at all.
   */
  commit?: Pick<CommitInput, 'nodes' | 'position' | 'nextNodeId' | 'usage'>;
}

/** A prompt waiting in its session's queue, as GET /v1/runs/:id shows it before its run starts. */
export interface QueuedRunRecord extends QueuedPromptRecord {
  sessionId: string;
  /** Its place in the session's queue, from 1 (the next to run). */
  position: number;
}

export interface UpdatePausedRunInput {
  sessionId: string;
  runId: string;
  /** The pending state this update was computed from: compare-and-set, so concurrent decisions never get lost. */
  expectedPending: JsonObject;
  pending: JsonObject;
  /** True when every awaited decision is in: paused -> busy (run running); false keeps it paused. */
  resume: boolean;
}

export type UpdatePausedRunResult =
  | { ok: true; run: RunRecord; session: SessionRecord }
  | { ok: false; reason: 'not_found' | 'not_paused' | 'conflict' };

/** Why a fenced write was refused: the run is no longer the session's active run. */
export type FencedResult = 'ok' | 'fenced';

/** What a run needs to execute, loaded in one transaction. */
export interface RunContext {
  session: SessionRecord;
  run: RunRecord;
  /**
   * The nodes along the session's active path, root first (the committed context of the run); null when the path
   * is longer than loadRun was asked to read (then pathTail reads what the run sends of it).
   */
  pathNodes: TreeNode[] | null;
  /** Each path node's stored token count (null: not counted), in the same order; absent: none known. */
  pathTokens?: Array<number | null>;
}

/**
 * What a run reads of a long path (canopy_path_tail): the tail holding more than `tailTokens` tokens, back to a turn's
 * start (null: the whole path); with `fromSummary`, no further back than the nearest node a context summary is stored
 * against; and the first `headTurns` turns.
 */
export interface PathLoad {
  tailTokens: number | null;
  headTurns: number;
  fromSummary: boolean;
}

/** Nodes of a path as read for a run: the nodes, their stored token counts and their places in the path (0-based). */
export interface PathPart {
  nodes: TreeNode[];
  tokens: Array<number | null>;
  positions: number[];
  /** Each tail node's tokens as the walk took them (its stored count, else an estimate from its length); null else. */
  counted: Array<number | null>;
}

/**
 * `ok`: committed; `steer` is the prompt staged on the run if the commit was asked to finish but found one — then
 * the run did NOT finish (the session stays busy, the steer is cleared) and the caller runs the steered prompt.
 */
export type CommitResult =
  | { status: 'fenced' }
  | {
      status: 'ok';
      steer: JsonObject | null;
      /** Whether this commit titled the session (it ended the run and the session had no title). */
      titled: boolean;
      /**
       * Whether prompts wait in the session's queue (double texting) now that this commit ended the run; false
       * when the run goes on. A prompt queued after the commit starts itself (the session is idle by then).
       */
      queued: boolean;
    };

/** The sessions themselves: their rows, trees and positions. */
export interface SessionRecordStore {
  /** Persists a new session at once. An explicit id already used in the tenant: CanopyException already_exists. */
  create(scope: Scope, input: CreateSessionInput): Promise<SessionRecord>;
  get(scope: Scope, id: string): Promise<SessionRecord | null>;
  exists(scope: Scope, id: string): Promise<boolean>;
  /** The session and every node of its tree, in one query. */
  loadTree(scope: Scope, id: string): Promise<{ session: SessionRecord; nodes: TreeNode[] } | null>;
  list(scope: Scope, query: ListSessionsQuery): Promise<SessionPage>;
  /**
   * Writes the fields that differ from the stored ones (nothing when none does: `changed: false`, updatedAt kept).
   * With idleOnly, refuses unless the session is idle: CanopyException session_busy / session_paused.
   * Unknown id: CanopyException not_found.
   */
  updateState(
    scope: Scope,
    id: string,
    patch: SessionStatePatch,
    options?: { idleOnly?: boolean },
  ): Promise<{ session: SessionRecord; changed: boolean }>;
  /** Navigation: writes path, cursors and head only, and only while idle (session_busy / session_paused). */
  savePosition(scope: Scope, id: string, position: PositionRecord): Promise<SessionRecord>;
  /** Deletes the session with its nodes and runs. False when it did not exist. */
  delete(scope: Scope, id: string): Promise<boolean>;
  /**
   * Keeps the token meter counted at `head` (the head it was counted from), unless the session has moved on from
   * that head meanwhile (a later run's meter is not overwritten by an older one). updatedAt is left as it is: the
   * meter describes the session, it does not change it. Answers whether it was kept.
   */
  saveContextMeter(scope: Scope, id: string, head: NodeId | null, meter: ContextMeter): Promise<boolean>;
}

/** Runs: their start, execution, commits, pauses and ends, fenced on the session's active run. */
export interface RunStore {
  /**
   * Atomically: only an idle session starts a run (it becomes busy, owned by the new run), and it counts against
   * the runs quotas that apply (refused when one is used up: exact under any concurrency). The run records the
   * scope's actor (actorOf) as who started it.
   */
  startRun(scope: Scope, input: StartRunInput): Promise<StartRunResult>;
  getRun(scope: Scope, runId: string): Promise<RunRecord | null>;
  /**
   * The run with this id or, before it starts, the queued prompt that will be it (with its place in the queue):
   * the queue is read first, then the runs, so a prompt whose run starts meanwhile is found as one or the other.
   * Null when the scope sees neither.
   */
  getRunOrQueued(
    scope: Scope,
    runId: string,
  ): Promise<{ run: RunRecord } | { queued: QueuedRunRecord } | null>;
  /**
   * Takes a run for execution in one transaction: a queued run becomes running (the attempt counted), a running
   * one counts another attempt (taken over); returns the session, the run and the nodes along the active path
   * (none when the path has more than `maxNodes`: see pathTail).
   * Null when the run is not the session's active run or is not queued/running (nothing to execute).
   */
  loadRun(scope: Scope, sessionId: string, runId: string, maxNodes?: number): Promise<RunContext | null>;
  /**
   * What a run sends of a long path, read by walking it from its ends (rows read about the rows sent, however long
   * the path), in path order. `path` null: the session's active path as stored (a busy session's is its run's), not
   * sent again.
   */
  pathTail(
    scope: Scope,
    sessionId: string,
    path: readonly NodeId[] | null,
    load: PathLoad,
  ): Promise<PathPart>;
  /**
   * Appends the nodes, moves the position, adds usage and clears the run's rollback point and pending state,
   * fenced on the run still being the session's active run; with `finish`, also ends the run (completed) and sets
   * the session idle — unless a steered prompt is staged on the run (see CommitResult).
   */
  commit(scope: Scope, input: CommitInput): Promise<CommitResult>;
  /** Busy -> paused with the run's pending state (and its usage so far, when given), fenced. */
  pauseRun(
    scope: Scope,
    sessionId: string,
    runId: string,
    pending: JsonObject,
    usage?: Usage,
  ): Promise<FencedResult>;
  /**
   * Records decisions on a paused run (its pending state, compare-and-set) and, with `resume`, sets it busy again.
   * not_paused when the session is not paused on that run; conflict when pending changed since it was read.
   */
  updatePausedRun(scope: Scope, input: UpdatePausedRunInput): Promise<UpdatePausedRunResult>;
  /**
   * Ends a run as cancelled or failed: session idle, position restored when asked (or, for an interrupted run, what
   * it keeps committed), fenced.
   */
  endRun(scope: Scope, input: EndRunInput): Promise<FencedResult>;
  /** The turns of the session whose latest regeneration failed (see turn-runs.ts), with its error. */
  failedTurns(scope: Scope, sessionId: string): Promise<FailedTurn[]>;
  /**
   * Records the id the client gave a run of the session (AG-UI's runId): a run continued by a later input (its
   * interrupts answered) takes that input's id. False when the scope sees no such run of the session.
   */
  setClientRunId(scope: Scope, sessionId: string, runId: string, clientRunId: string): Promise<boolean>;
  /**
   * The session's run its client named `clientRunId` (the latest, should a client reuse an id) and the head its last
   * commit left (null: it committed nothing); null when the scope sees no such run of this session.
   */
  runByClientId(scope: Scope, sessionId: string, clientRunId: string): Promise<ClientRunRecord | null>;
  /** Runs not finished (queued, running, paused) in every tenant: for recovery at start-up. */
  unfinishedRuns(): Promise<Array<{ tenantId: string; sessionId: string; runId: string; status: RunStatus }>>;
}

/** The prompts that wait for a run: the one staged on a run in flight (steering) and a session's queue. */
export interface PromptQueueStore {
  /**
   * The session and its queued prompts (in the order they will run) in one transaction: the queue read first, then
   * the session, each statement on its own snapshot, so a drain that starts the head's run and then takes it out of
   * the queue never shows as an idle session with nothing queued. Null when the scope does not see the session.
   */
  getWithQueue(
    scope: Scope,
    id: string,
  ): Promise<{ session: SessionRecord; queued: QueuedPromptRecord[] } | null>;
  /**
   * Stages a prompt on the active run of a busy or paused session (last one wins), with the scope's actor
   * (`actor`: who sent it). Null when idle.
   */
  stageSteer(scope: Scope, sessionId: string, prompt: JsonObject): Promise<{ runId: string } | null>;
  /**
   * Puts a prompt in the session's queue (interrupt and rollback at the front, after those already there), with
   * the scope's actor. False when the scope sees no such session.
   */
  enqueuePrompt(
    scope: Scope,
    sessionId: string,
    entry: { id: string; mode: QueueMode; input: JsonObject },
  ): Promise<boolean>;
  /** The session's queued prompts in the order they will run. */
  queuedPrompts(scope: Scope, sessionId: string): Promise<QueuedPromptRecord[]>;
  /** Takes a prompt out of the session's queue (its run started, or it was cancelled); false when not there. */
  dequeuePrompt(scope: Scope, sessionId: string, id: string): Promise<boolean>;
  /**
   * Where a run's first message on the active path was attached (its parent: null for a root), the earliest
   * path node stored since the run was created; null when the run left nothing on the active path.
   */
  attachPointOf(scope: Scope, sessionId: string, runId: string): Promise<{ nodeId: NodeId | null } | null>;
  /** Idle sessions with queued prompts, in every tenant: what a process that died left waiting (recovery). */
  idleSessionsWithQueue(): Promise<Array<{ tenantId: string; sessionId: string }>>;
}

/** The whole port, by concept: sessions, runs, the prompt queue. Its users depend on the parts they use. */
/** A summary to store: the session, what it covers and says, and what writing it cost. */
export interface SaveSummaryInput extends ContextSummary {
  sessionId: string;
  /** The model that wrote it. */
  model: string;
  /** Usage of the summarizing call. */
  usage: Usage;
}

/**
 * Summaries of a conversation's oldest turns (context policy `summarize`), stored against the last node each covers:
 * a run reads those of the nodes on its path and writes a new one at most once per (session, node).
 */
export interface ContextSummaryStore {
  /** The summaries stored against any of `nodeIds` of the session, oldest node first. */
  summariesOn(scope: Scope, sessionId: string, nodeIds: readonly number[]): Promise<ContextSummary[]>;
  /** Stores a summary unless one covers the same node already (the first stays); answers whether it stored this one. */
  saveSummary(scope: Scope, input: SaveSummaryInput): Promise<boolean>;
  /** Every summary of the session with the model and usage that wrote it, oldest node first (an export's). */
  summariesOf(scope: Scope, sessionId: string): Promise<ConversationSummary[]>;
}

export interface SessionStore extends SessionRecordStore, RunStore, PromptQueueStore, ContextSummaryStore {}

export const SESSION_STORE = Symbol('SESSION_STORE');
