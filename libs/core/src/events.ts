// The one map of live events, shared by the service, the SDK and the tests. Session events carry a
// per-session, strictly increasing `seq`; the activity feed tells dashboards what happens across sessions.

import type { Message, ToolResultBlock, ToolUseBlock } from './message';
import type { NodeId, TreeNode } from './tree';
import type { Usage } from './usage';

/** Why a run failed: its code, a message, and for some codes figures (`context_length_exceeded`: tokens, window). */
export interface RunError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** What a `context` event carries (see SessionEventMap). */
export interface ContextEventData {
  /** The run it is of (null: none, e.g. a meter read while idle). */
  runId: string | null;
  kind: 'meter' | 'summarizing' | 'summarized' | 'summary_failed';
  strategy: 'none' | 'truncate' | 'summarize';
  /** Tokens of the request: what the next run would send (`meter`), or the one being planned. */
  tokens: number;
  /** The model's context window; null when unknown. */
  window: number | null;
  /** The last node the summary in use covers; null when none does. */
  summarizedThrough: number | null;
  /** Why a summary failed (`summary_failed`). */
  message?: string;
}

/**
 * The session's token meter: what the next run from its head would send, counted after its last run ended (a
 * `context` event of kind `meter`), kept with the session.
 */
export interface ContextMeter {
  tokens: number;
  /** The model's context window; null when unknown. */
  window: number | null;
  strategy: ContextEventData['strategy'];
  /** The last node the summary in use covers; null when none does. */
  summarizedThrough: number | null;
  /**
   * What the provider reported as the last request's input tokens over Canopy's count of it, when that is more than
   * 1 (the count fell short): later counts of the session are raised by it. Absent: the counts held.
   */
  calibration?: number;
}

export type SessionStatus = 'idle' | 'busy' | 'paused';
export type RunKind = 'prompt' | 'branch' | 'resume';
export type RunStatus = 'queued' | 'running' | 'paused' | 'completed' | 'cancelled' | 'error';

/** A tool a session declares for its client to execute (no handler on the server). */
export interface ClientTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** Ask the user before the client executes it. */
  approval?: boolean;
}

/** What a session is, as the API shows it. */
export interface SessionInfo {
  id: string;
  title: string | null;
  model: string;
  system: string | null;
  opts: Record<string, unknown>;
  tools: ClientTool[];
  metadata: Record<string, unknown>;
  userId: string | null;
  status: SessionStatus;
  /** Exempt from the tenant's retention policy (unless it keeps nothing). */
  pinned: boolean;
  /** The token meter after the session's last run; null before any run was counted. */
  context: ContextMeter | null;
  createdAt: string;
  updatedAt: string;
}

/** The part of a run that has not been committed to the tree yet (what a mid-run joiner must see). */
export interface InFlight {
  runId: string;
  kind: RunKind;
  /** Messages of the run completed so far (the prompt, finished steps, tool results). */
  pending: Message[];
  /** The assistant message being streamed, or null between steps. */
  partial: Message | null;
  /** Tool uses awaiting a decision while the run is paused. */
  awaiting: ToolUseBlock[];
}

/**
 * The state a subscription starts from; `seq` is the last event it reflects. Its tree is what a live view needs: the
 * active path's recent part (a live session keeps its last LIVE_PATH_NODES nodes), the versions (siblings) of its
 * nodes and the children of the head; `cursors` of those nodes. `partial` is there when `path` starts after the
 * root: `omitted` nodes of the active path come before `path[0]` (`firstNodeId`; null with an empty `path`, when
 * none of the path's recent part is held yet). Earlier turns are read through the tree and turns routes.
 */
export interface SessionSnapshot {
  seq: number;
  session: SessionInfo;
  tree: {
    nodes: TreeNode[];
    path: NodeId[];
    cursors: Record<string, NodeId>;
    head: NodeId | null;
    partial?: { firstNodeId: NodeId | null; omitted: number };
  };
  inFlight: InFlight | null;
}

export type StoreKind = 'tree' | 'state';

export interface SessionEventMap {
  snapshot: SessionSnapshot;
  /** Emitted before the event that caused the change. */
  status: { status: SessionStatus; runId: string | null };
  /**
   * Every message appended during a run (prompt, assistant step, tool results); `nodeId`: the tree node it
   * takes when the run commits it (a cancelled or failed run never does; one a newer prompt interrupted does).
   */
  message: { runId: string; message: Message; nodeId?: NodeId };
  text_start: { runId: string; index: number };
  text_delta: { runId: string; index: number; delta: string };
  text_end: { runId: string; index: number };
  thinking_start: { runId: string; index: number };
  thinking_delta: { runId: string; index: number; delta: string };
  thinking_end: { runId: string; index: number };
  tool_use_start: { runId: string; index: number; id: string; name: string };
  tool_use_delta: { runId: string; index: number; id: string; delta: string };
  tool_use_end: { runId: string; index: number; block: ToolUseBlock };
  tool_result: { runId: string; toolName: string; result: ToolResultBlock };
  tool_progress: { runId: string; toolUseId: string; payload: unknown };
  /** One model call finished. */
  step: { runId: string; step: number; usage: Usage; finishReason: string };
  /**
   * A commit point: `stop` ends the run, `continue` commits and goes on (a steered prompt follows). `reason`
   * `interrupted`: a newer prompt interrupted the run (`ifBusy: "interrupt"`), which ends here (its record says
   * cancelled) committing `messages`, what it kept, the last one marked `interrupted`.
   */
  turn: { runId: string; stop: 'stop' | 'continue'; reason: string; messages: Message[]; usage: Usage };
  pause: { runId: string; reason: 'approval' | 'client_tool'; toolUses: ToolUseBlock[] };
  retry: { runId: string; attempt: number; delayMs: number; error: string };
  /** The run was cancelled: nothing more of it is committed; `partial`, what it had not committed. */
  cancelled: { runId: string; partial: Message[]; usage: Usage };
  /**
   * `code`: a model error code (rate_limited, provider_error, target_refused, ...), hook_halted (a pre-hook halted
   * the run), hook_failed (a sequential pre-hook threw), injection_overflow (hook injections over their budget),
   * interrupted, context_length_exceeded (the request would not fit the model's window; `details`: `{tokens,
   * window}`), internal.
   */
  error: { runId: string | null } & RunError;
  state: {
    model: string;
    system: string | null;
    opts: Record<string, unknown>;
    tools: ClientTool[];
    metadata: Record<string, unknown>;
  };
  /** The tree changed: nodes appended (a commit) or the path moved (navigation, branch start, rollback). */
  tree: {
    newNodes: NodeId[];
    nodes: TreeNode[];
    path: NodeId[];
    cursors: Record<string, NodeId>;
    head: NodeId | null;
  };
  title: { title: string | null };
  /**
   * The session's context against its model's window: `meter` after each run (what the next run from the head
   * would send: its tokens, and the node its summary covers), `summarizing` when a run starts summarizing older
   * turns, `summarized` once that summary is stored, `summary_failed` when it failed (the run truncates instead,
   * and `message` says why).
   */
  context: ContextEventData;
  store: { ok: true; kind: StoreKind } | { ok: false; kind: StoreKind; error: string };
}

export type SessionEventType = keyof SessionEventMap;

export const SESSION_EVENT_TYPES = [
  'snapshot',
  'status',
  'message',
  'text_start',
  'text_delta',
  'text_end',
  'thinking_start',
  'thinking_delta',
  'thinking_end',
  'tool_use_start',
  'tool_use_delta',
  'tool_use_end',
  'tool_result',
  'tool_progress',
  'step',
  'turn',
  'pause',
  'retry',
  'cancelled',
  'error',
  'state',
  'tree',
  'title',
  'context',
  'store',
] as const satisfies readonly SessionEventType[];

/** Events about the session as a whole rather than a step of the run in flight (an error may name a run too). */
const SESSION_LEVEL_EVENTS: ReadonlySet<SessionEventType> = new Set([
  'snapshot',
  'error',
  'state',
  'tree',
  'title',
  'context',
  'store',
] as const);

/** The events of a run in flight, each naming it (`runId`). */
export const RUN_EVENT_TYPES: ReadonlySet<SessionEventType> = new Set(
  SESSION_EVENT_TYPES.filter((type) => !SESSION_LEVEL_EVENTS.has(type)),
);

/** An event before the bus numbers it. */
export type SessionEventInput = {
  [K in SessionEventType]: { type: K; data: SessionEventMap[K] };
}[SessionEventType];

/** An event as subscribers receive it. */
export type SessionEvent = {
  [K in SessionEventType]: { seq: number; sessionId: string; type: K; data: SessionEventMap[K]; at: number };
}[SessionEventType];

/** An event without its publication time (what an SSE client gets: seq, type and data). */
export type SessionEventBody = {
  [K in SessionEventType]: { seq: number; sessionId: string; type: K; data: SessionEventMap[K] };
}[SessionEventType];

export interface ActivityEventMap {
  opened: { id: string; title: string | null; status: SessionStatus; userId: string | null };
  status: { id: string; status: SessionStatus };
  title: { id: string; title: string | null };
  /** `expired`: deleted by the tenant's retention policy. */
  closed: { id: string; reason: 'close' | 'delete' | 'idle' | 'shutdown' | 'expired' };
  run_started: { id: string; runId: string; kind: RunKind };
  run_finished: { id: string; runId: string; status: RunStatus; usage: Usage };
}

export type ActivityEventType = keyof ActivityEventMap;

export type ActivityEvent = {
  [K in ActivityEventType]: { tenantId: string; type: K; data: ActivityEventMap[K]; at: number };
}[ActivityEventType];
