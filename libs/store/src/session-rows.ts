// Rows of the sessions, nodes and runs tables as the session store reads them: the column lists its statements
// select (also from the row values the canopy_* functions answer), the row shapes, and their mapping to domain
// records. Json columns are checked for their shape, not trusted. Also the store's JSON parameters and its opaque
// list cursor.

import { CanopyException } from '@canopy/common';
import {
  makeUsage,
  parseActor,
  USAGE_FIELDS,
  unstorableTextPath,
  type ClientTool,
  type ContextMeter,
  type ConversationSummary,
  type Message,
  type NodeId,
  type RunError,
  type RunKind,
  type RunStatus,
  type SessionStatus,
  type TreeNode,
  type Usage,
} from '@canopy/core';
import { raw, sql, type Sql } from './sql';
import type { JsonObject, PositionRecord, RunRecord, SessionRecord } from './session-store.port';

// Columns are qualified by their table name (never an alias) so one list serves SELECT, UPDATE ... RETURNING
// and INSERT ... RETURNING alike; enums and uuids come back as plain text.
const SESSION_COLUMN_LIST = [
  'sessions.tenant_id::text AS tenant_id',
  'sessions.id',
  'sessions.user_id',
  'sessions.title',
  'sessions.model',
  'sessions.system',
  'sessions.opts',
  'sessions.tools',
  'sessions.metadata',
  'sessions.status::text AS status',
  'sessions.path',
  'sessions.cursors',
  'sessions.head',
  'sessions.next_node_id',
  'sessions.usage',
  'sessions.idle_shutdown_after_ms',
  'sessions.active_run_id::text AS active_run_id',
  'sessions.pinned',
  'sessions.context_meter',
  'sessions.created_at',
  'sessions.updated_at',
];
export const SESSION_COLUMNS = raw(SESSION_COLUMN_LIST.join(', '));

const RUN_COLUMN_LIST = [
  'runs.id::text AS id',
  'runs.tenant_id::text AS tenant_id',
  'runs.session_id',
  'runs.kind::text AS kind',
  'runs.status::text AS status',
  'runs.input',
  'runs.pending',
  'runs.steer',
  'runs.rollback',
  'runs.error',
  'runs.usage',
  'runs.attempts',
  'runs.actor',
  'runs.created_at',
  'runs.started_at',
  'runs.finished_at',
];
export const RUN_COLUMNS = raw(RUN_COLUMN_LIST.join(', '));
/** The output names of RUN_COLUMNS (the alias, or the bare column). */
const RUN_NAMES = RUN_COLUMN_LIST.map((c) => c.split(' AS ')[1] ?? c.slice('runs.'.length));

/**
 * A column list read from a row value instead of its table (`(started.session).id` for `sessions.id`), each
 * column named with `prefix`: the canopy_* functions answer whole session and run rows, and one result row
 * carries a session and its run side by side as SessionRow and run_-prefixed RunRow columns (both have id,
 * status, usage ...; runFrom reads the run back).
 */
function fieldsOf(columns: readonly string[], table: string, row: string, prefix = ''): Sql {
  return raw(
    columns
      .map((column) => {
        const [expression = column, alias] = column.split(' AS ');
        const name = alias ?? expression.slice(`${table}.`.length);
        return `${row}.${expression.slice(`${table}.`.length)} AS ${prefix}${name}`;
      })
      .join(', '),
  );
}

/** The session and run columns of a canopy_* function's result, from its `session` and `run` row values. */
/** The session columns of a function's OUT parameter `session` (e.g. canopy_fork's), named as SESSION_COLUMNS names them. */
export function sessionOf(result: string): Sql {
  return fieldsOf(SESSION_COLUMN_LIST, 'sessions', `(${result}.session)`);
}

export function sessionAndRunOf(result: string): Sql {
  return sql`${fieldsOf(SESSION_COLUMN_LIST, 'sessions', `(${result}.session)`)},
             ${fieldsOf(RUN_COLUMN_LIST, 'runs', `(${result}.run)`, 'run_')}`;
}

export interface SessionRow {
  tenant_id: string;
  id: string;
  user_id: string | null;
  title: string | null;
  model: string;
  system: string | null;
  opts: unknown;
  tools: unknown;
  metadata: unknown;
  status: SessionStatus;
  path: number[];
  cursors: unknown;
  head: number | null;
  next_node_id: number;
  usage: unknown;
  idle_shutdown_after_ms: number | null;
  active_run_id: string | null;
  pinned: boolean;
  context_meter: unknown;
  created_at: Date;
  updated_at: Date;
}

export interface RunRow {
  id: string;
  tenant_id: string;
  session_id: string;
  kind: RunKind;
  status: RunStatus;
  input: unknown;
  pending: unknown;
  steer: unknown;
  rollback: unknown;
  error: unknown;
  usage: unknown;
  attempts: number;
  actor: unknown;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** A run's columns as runColumnsOf names them. */
export type PrefixedRunRow = { [K in keyof RunRow as `run_${K}`]: RunRow[K] };

export interface NodeJson {
  id: number;
  parentId: number | null;
  message: Message;
  usage: unknown;
}

/** A node as a run reads it (canopy_load_run, canopy_path_tail): with its stored token count. */
export interface PathNodeJson extends NodeJson {
  tokens?: number | null;
}

/**
 * A node as json_build_object for NodeJson (the catalog's export aggregates nodes beside their session;
 * canopy_load_tree and canopy_load_run build the same).
 */
export const NODE_JSON = raw(
  `json_build_object('id', nodes.id, 'parentId', nodes.parent_id, 'message', nodes.message, 'usage', nodes.usage)`,
);

/** A context summary (alias `c` of context_summaries) as json_build_object gives it: what an export carries. */
export interface SummaryJson {
  throughNodeId: number;
  text: string;
  tokens: number;
  model: string;
  usage: unknown;
}

export const SUMMARY_JSON = raw(
  `json_build_object('throughNodeId', c.through_node_id, 'text', c.text, 'tokens', c.tokens, 'model', c.model, 'usage', c.usage)`,
);

export type Nullable<T> = { [K in keyof T]: T[K] | null };

/** A canopy_* function's session and run (sessionAndRunOf), NULL when it answered none. */
export type StartedRow = Nullable<SessionRow> & Nullable<PrefixedRunRow>;

// JSON travels as text and is cast, so Postgres (not the driver) decides how it is stored.
export function json(value: unknown): Sql {
  return sql`${JSON.stringify(value)}::jsonb`;
}

export function jsonOrNull(value: unknown): Sql {
  return value === null || value === undefined ? raw('NULL::jsonb') : json(value);
}

// Cursor: the last row's sort key. Opaque to clients; anything we did not make is a bad request.

export function encodeCursor(session: SessionRecord): string {
  return Buffer.from(JSON.stringify({ updatedAt: session.updatedAt.toISOString(), id: session.id })).toString(
    'base64url',
  );
}

export function decodeCursor(cursor: string): { updatedAt: string; id: string } {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (parsed !== null && typeof parsed === 'object') {
      const { updatedAt, id } = parsed as { updatedAt?: unknown; id?: unknown };
      if (typeof updatedAt === 'string' && typeof id === 'string') {
        const at = new Date(updatedAt);
        const iso = Number.isNaN(at.getTime()) ? '' : at.toISOString();
        // The id goes to Postgres as text: one it could not store (a NUL, a lone surrogate) is no cursor of ours.
        if (/^\d{4}-/.test(iso) && id.length <= 128 && unstorableTextPath(id) === null)
          return { updatedAt: iso, id };
      }
    }
  } catch {
    // fall through: not base64url JSON
  }
  throw CanopyException.badRequest('invalid cursor', { cursor });
}

// Rows to domain records. Json columns are checked for their shape, not trusted: a row written by hand or by an
// older version still reads as a well-formed record.

export function toSession(row: SessionRow): SessionRecord {
  return {
    tenantId: row.tenant_id,
    id: row.id,
    userId: row.user_id,
    title: row.title,
    model: row.model,
    system: row.system,
    opts: jsonObject(row.opts),
    tools: Array.isArray(row.tools) ? (row.tools as ClientTool[]) : [],
    metadata: jsonObject(row.metadata),
    status: row.status,
    path: row.path,
    cursors: toCursors(row.cursors),
    head: row.head,
    nextNodeId: row.next_node_id,
    usage: toUsage(row.usage),
    idleShutdownAfterMs: row.idle_shutdown_after_ms,
    activeRunId: row.active_run_id,
    pinned: row.pinned === true,
    contextMeter: toContextMeter(row.context_meter),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The run of a row that carries it as runColumnsOf names it. */
export function runFrom(row: PrefixedRunRow): RunRow {
  const run: Record<string, unknown> = {};
  for (const name of RUN_NAMES) run[name] = (row as unknown as Record<string, unknown>)[`run_${name}`];
  return run as unknown as RunRow;
}

export function toRun(row: RunRow): RunRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    sessionId: row.session_id,
    kind: row.kind,
    status: row.status,
    input: jsonObject(row.input),
    pending: row.pending === null ? null : jsonObject(row.pending),
    steer: row.steer === null ? null : jsonObject(row.steer),
    rollback: toPosition(row.rollback),
    error: toError(row.error),
    usage: toUsage(row.usage),
    attempts: row.attempts,
    actor: parseActor(row.actor),
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  };
}

export function toNode(n: NodeJson): TreeNode {
  return {
    id: n.id,
    parentId: n.parentId,
    message: n.message,
    usage: n.usage === null ? null : toUsage(n.usage),
  };
}

export function toSummary(c: SummaryJson): ConversationSummary {
  return {
    throughNodeId: c.throughNodeId,
    text: c.text,
    tokens: c.tokens,
    model: c.model,
    usage: toUsage(c.usage),
  };
}

export function jsonObject(value: unknown): JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : {};
}

/** A complete Usage from whatever is stored; `{}` (the column default) is zero usage. */
export function toUsage(value: unknown): Usage {
  const stored = jsonObject(value);
  const parts: Partial<Usage> = {};
  for (const field of USAGE_FIELDS) {
    const v = stored[field];
    if (typeof v === 'number' && Number.isFinite(v)) parts[field] = v;
  }
  return makeUsage(parts);
}

function toCursors(value: unknown): Record<string, NodeId> {
  const cursors: Record<string, NodeId> = {};
  for (const [parent, child] of Object.entries(jsonObject(value))) {
    if (typeof child === 'number') cursors[parent] = child;
  }
  return cursors;
}

function toPosition(value: unknown): PositionRecord | null {
  if (value === null || typeof value !== 'object') return null;
  const { path, cursors, head } = value as { path?: unknown; cursors?: unknown; head?: unknown };
  return {
    path: Array.isArray(path) ? path.filter((n): n is number => typeof n === 'number') : [],
    cursors: toCursors(cursors),
    head: typeof head === 'number' ? head : null,
  };
}

const METER_STRATEGIES: ReadonlySet<unknown> = new Set<ContextMeter['strategy']>([
  'none',
  'truncate',
  'summarize',
]);

/** The stored meter when it is one (null for NULL, and for anything else: it is counted again after the next run). */
export function toContextMeter(value: unknown): ContextMeter | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const { tokens, window, strategy, summarizedThrough, calibration } = value as Record<string, unknown>;
  const count = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (!count(tokens) || !(window === null || count(window)) || !METER_STRATEGIES.has(strategy)) return null;
  return {
    tokens,
    window,
    strategy: strategy as ContextMeter['strategy'],
    summarizedThrough: count(summarizedThrough) ? summarizedThrough : null,
    ...(typeof calibration === 'number' && calibration > 1 && calibration <= 2 ? { calibration } : {}),
  };
}

function toError(value: unknown): RunError | null {
  if (value === null || typeof value !== 'object') return null;
  const { code, message, details } = value as { code?: unknown; message?: unknown; details?: unknown };
  return {
    code: typeof code === 'string' ? code : 'internal',
    message: typeof message === 'string' ? message : '',
    ...(details !== null && typeof details === 'object' && !Array.isArray(details)
      ? { details: details as Record<string, unknown> }
      : {}),
  };
}
