// The Postgres adapter of the SessionStore port: sessions, their tree nodes and their runs. Every method runs in
// one tenant transaction and speaks SQL directly, so each state change is one visible, conditional statement
// (compare-and-set on status / active_run_id) and the hot paths (tree load, turn commit) are single named
// queries. Rows become domain records here; no Prisma type leaves this file.

import { randomBytes, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CanopyException } from '@canopy/common';
import {
  addUsage,
  makeUsage,
  USAGE_FIELDS,
  type ClientTool,
  type Message,
  type NodeId,
  type RunKind,
  type RunStatus,
  type Scope,
  type SessionStatus,
  type TreeNode,
  type Usage,
} from '@canopy/core';
import { Database, isUuid, type Tx } from './database';
import { Prisma } from './generated/prisma/client';
import type {
  CommitInput,
  CreateSessionInput,
  EndRunInput,
  FencedResult,
  JsonObject,
  ListSessionsQuery,
  PositionRecord,
  RunRecord,
  SessionPage,
  SessionRecord,
  SessionStatePatch,
  SessionStore,
  StartRunInput,
  StartRunResult,
  UpdatePausedRunInput,
  UpdatePausedRunResult,
} from './session-store.port';

const MAX_PAGE = 100;

// Columns are qualified by their table name (never an alias) so one list serves SELECT, UPDATE ... RETURNING
// and INSERT ... RETURNING alike; enums and uuids come back as plain text.
const SESSION_COLUMNS = Prisma.raw(
  [
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
    'sessions.created_at',
    'sessions.updated_at',
  ].join(', '),
);

const RUN_COLUMNS = Prisma.raw(
  [
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
    'runs.created_at',
    'runs.started_at',
    'runs.finished_at',
  ].join(', '),
);

interface SessionRow {
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
  created_at: Date;
  updated_at: Date;
}

interface RunRow {
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
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

interface NodeJson {
  id: number;
  parentId: number | null;
  message: Message;
  usage: unknown;
}

@Injectable()
export class PrismaSessionStore implements SessionStore {
  constructor(private readonly db: Database) {}

  // Sessions

  async create(scope: Scope, input: CreateSessionInput): Promise<SessionRecord> {
    const id = input.id ?? randomBytes(16).toString('base64url');
    // A user token creates sessions for its own user only: anything else would be invisible to its creator.
    const userId = scope.userId ?? input.userId ?? null;
    // ON CONFLICT keeps create-if-absent one atomic statement; no row back means the id is taken in this tenant.
    const [row] = await this.db.withTenant(
      scope,
      (tx) => tx.$queryRaw<SessionRow[]>`
        INSERT INTO sessions
          (tenant_id, id, user_id, title, model, system, opts, tools, metadata, idle_shutdown_after_ms)
        VALUES (${scope.tenantId}::uuid, ${id}, ${userId}::text, ${input.title ?? null}::text, ${input.model},
                ${input.system ?? null}::text, ${json(input.opts ?? {})}, ${json(input.tools ?? [])},
                ${json(input.metadata ?? {})}, ${input.idleShutdownAfterMs ?? null}::int)
        ON CONFLICT (tenant_id, id) DO NOTHING
        RETURNING ${SESSION_COLUMNS}`,
    );
    if (!row) throw new CanopyException('already_exists', `session ${id} already exists`, { id });
    return toSession(row);
  }

  async get(scope: Scope, id: string): Promise<SessionRecord | null> {
    const [row] = await this.db.withTenant(
      scope,
      (tx) =>
        tx.$queryRaw<SessionRow[]>`SELECT ${SESSION_COLUMNS} FROM sessions WHERE ${whereSession(scope, id)}`,
    );
    return row ? toSession(row) : null;
  }

  async exists(scope: Scope, id: string): Promise<boolean> {
    const [row] = await this.db.withTenant(
      scope,
      (tx) =>
        tx.$queryRaw<
          { found: boolean }[]
        >`SELECT EXISTS (SELECT 1 FROM sessions WHERE ${whereSession(scope, id)}) AS found`,
    );
    return row?.found === true;
  }

  async loadTree(scope: Scope, id: string): Promise<{ session: SessionRecord; nodes: TreeNode[] } | null> {
    // One statement: the session row with its whole tree aggregated beside it, in id order.
    const [row] = await this.db.withTenant(
      scope,
      (tx) => tx.$queryRaw<(SessionRow & { nodes: NodeJson[] })[]>`
        SELECT ${SESSION_COLUMNS},
               COALESCE((SELECT json_agg(json_build_object('id', nodes.id, 'parentId', nodes.parent_id,
                                                           'message', nodes.message, 'usage', nodes.usage)
                                         ORDER BY nodes.id)
                           FROM nodes
                          WHERE nodes.tenant_id = sessions.tenant_id AND nodes.session_id = sessions.id),
                        '[]') AS nodes
          FROM sessions
         WHERE ${whereSession(scope, id)}`,
    );
    if (!row) return null;
    const nodes = row.nodes.map((n): TreeNode => ({
      id: n.id,
      parentId: n.parentId,
      message: n.message,
      usage: n.usage === null ? null : toUsage(n.usage),
    }));
    return { session: toSession(row), nodes };
  }

  async list(scope: Scope, query: ListSessionsQuery): Promise<SessionPage> {
    // The service validates the limit; clamping here only keeps a bad caller from asking for everything.
    const limit = Math.min(MAX_PAGE, Math.max(1, Math.trunc(query.limit) || 1));
    const after = query.cursor ? decodeCursor(query.cursor) : null;
    const conditions: Prisma.Sql[] = [Prisma.sql`sessions.tenant_id = ${scope.tenantId}::uuid`];
    if (scope.userId !== undefined) conditions.push(Prisma.sql`sessions.user_id = ${scope.userId}`);
    if (query.userId !== undefined) conditions.push(Prisma.sql`sessions.user_id = ${query.userId}`);
    // Keys are arbitrary user strings: bound as parameters, never spliced into the SQL. `->>` keeps the port's
    // text comparison (a stored number 5 matches "5"), which the jsonb_path_ops index (`@>`) could not.
    for (const [key, value] of Object.entries(query.metadata ?? {})) {
      conditions.push(Prisma.sql`sessions.metadata ->> ${key}::text = ${value}::text`);
    }
    if (after) {
      conditions.push(
        Prisma.sql`(sessions.updated_at, sessions.id) < (${after.updatedAt}::timestamptz, ${after.id}::text)`,
      );
    }
    // One row past the page tells whether another page follows.
    const rows = await this.db.withTenant(
      scope,
      (tx) => tx.$queryRaw<SessionRow[]>`
        SELECT ${SESSION_COLUMNS}
          FROM sessions
         WHERE ${Prisma.join(conditions, ' AND ')}
         ORDER BY sessions.updated_at DESC, sessions.id DESC
         LIMIT ${limit + 1}`,
    );
    const data = rows.slice(0, limit).map(toSession);
    const last = data[data.length - 1];
    return { data, nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
  }

  async updateState(
    scope: Scope,
    id: string,
    patch: SessionStatePatch,
    options: { idleOnly?: boolean } = {},
  ): Promise<{ session: SessionRecord; changed: boolean }> {
    const fields: Array<[column: string, value: Prisma.Sql]> = [];
    if (patch.title !== undefined) fields.push(['title', Prisma.sql`${patch.title}::text`]);
    if (patch.model !== undefined) fields.push(['model', Prisma.sql`${patch.model}::text`]);
    if (patch.system !== undefined) fields.push(['system', Prisma.sql`${patch.system}::text`]);
    if (patch.opts !== undefined) fields.push(['opts', json(patch.opts)]);
    if (patch.tools !== undefined) fields.push(['tools', json(patch.tools)]);
    if (patch.metadata !== undefined) fields.push(['metadata', json(patch.metadata)]);
    // jsonb `IS DISTINCT FROM` compares values, not text: a metadata object with its keys reordered is unchanged.
    const differs = fields.length
      ? Prisma.join(
          fields.map(
            ([column, value]) => Prisma.sql`sessions.${Prisma.raw(column)} IS DISTINCT FROM ${value}`,
          ),
          ' OR ',
        )
      : Prisma.sql`FALSE`;
    const idle = options.idleOnly ? Prisma.sql`AND sessions.status = 'idle'` : Prisma.empty;

    return this.db.withTenant(scope, async (tx) => {
      const write = () =>
        tx.$queryRaw<SessionRow[]>`
          UPDATE sessions
             SET ${Prisma.join(
               fields.map(([column, value]) => Prisma.sql`${Prisma.raw(column)} = ${value}`),
               ', ',
             )}, updated_at = now()
           WHERE ${whereSession(scope, id)} ${idle} AND (${differs})
          RETURNING ${SESSION_COLUMNS}`;
      // The common case is one conditional UPDATE; only when it touches nothing do we look at why.
      if (fields.length) {
        const [written] = await write();
        if (written) return { session: toSession(written), changed: true };
      }
      const [current] = await tx.$queryRaw<(SessionRow & { differs: boolean })[]>`
        SELECT ${SESSION_COLUMNS}, (${differs}) AS differs
          FROM sessions
         WHERE ${whereSession(scope, id)}
           FOR UPDATE`;
      if (!current) throw CanopyException.notFound('session');
      if (options.idleOnly && current.status !== 'idle') throw refusal(current.status);
      if (!current.differs) return { session: toSession(current), changed: false };
      // The session went idle between the two statements; we hold its lock now, so this write cannot miss.
      const [written] = await write();
      return { session: toSession(mustHave(written, 'session')), changed: true };
    });
  }

  async savePosition(scope: Scope, id: string, position: PositionRecord): Promise<SessionRecord> {
    return this.db.withTenant(scope, async (tx) => {
      const write = () =>
        tx.$queryRaw<SessionRow[]>`
          UPDATE sessions SET ${setPosition(position)}, updated_at = now()
           WHERE ${whereSession(scope, id)} AND sessions.status = 'idle'
          RETURNING ${SESSION_COLUMNS}`;
      const [written] = await write();
      if (written) return toSession(written);
      const status = await lockStatus(tx, scope, id);
      if (!status) throw CanopyException.notFound('session');
      if (status !== 'idle') throw refusal(status);
      // Went idle between the two statements; locked now, so the retry lands.
      const [retried] = await write();
      return toSession(mustHave(retried, 'session'));
    });
  }

  async delete(scope: Scope, id: string): Promise<boolean> {
    // Nodes and runs go with the session (ON DELETE CASCADE).
    const count = await this.db.withTenant(
      scope,
      (tx) => tx.$executeRaw`DELETE FROM sessions WHERE ${whereSession(scope, id)}`,
    );
    return count > 0;
  }

  // Runs

  async startRun(scope: Scope, input: StartRunInput): Promise<StartRunResult> {
    const runId = randomUUID();
    const running = input.status === 'running';
    return this.db.withTenant(scope, async (tx): Promise<StartRunResult> => {
      // Compare-and-set on status: of racing starts, the first to lock the idle row wins; the others re-check
      // the row after it commits, find it busy, and update nothing.
      const claim = () =>
        tx.$queryRaw<SessionRow[]>`
          UPDATE sessions
             SET status = 'busy', active_run_id = ${runId}::uuid,
                 ${input.position ? Prisma.sql`${setPosition(input.position)},` : Prisma.empty}
                 updated_at = now()
           WHERE ${whereSession(scope, input.sessionId)} AND sessions.status = 'idle'
          RETURNING ${SESSION_COLUMNS}`;
      let [session] = await claim();
      if (!session) {
        const status = await lockStatus(tx, scope, input.sessionId);
        if (!status) return { ok: false, reason: 'not_found' };
        if (status !== 'idle') return { ok: false, reason: status };
        [session] = await claim();
      }
      const claimed = mustHave(session, 'session');
      const [run] = await tx.$queryRaw<RunRow[]>`
        INSERT INTO runs (id, tenant_id, session_id, kind, status, input, rollback, attempts, started_at)
        VALUES (${runId}::uuid, ${scope.tenantId}::uuid, ${claimed.id}, ${input.kind}::run_kind,
                ${input.status}::run_status, ${json(input.input)}, ${jsonOrNull(input.rollback)},
                ${running ? 1 : 0}::int, ${running ? Prisma.sql`now()` : Prisma.sql`NULL`})
        RETURNING ${RUN_COLUMNS}`;
      return { ok: true, run: toRun(mustHave(run, 'run')), session: toSession(claimed) };
    });
  }

  async getRun(scope: Scope, runId: string): Promise<RunRecord | null> {
    if (!isUuid(runId)) return null;
    const [row] = await this.db.withTenant(
      scope,
      (tx) => tx.$queryRaw<RunRow[]>`
        SELECT ${RUN_COLUMNS} FROM runs
         WHERE runs.tenant_id = ${scope.tenantId}::uuid AND runs.id = ${runId}::uuid ${runUserFilter(scope)}`,
    );
    return row ? toRun(row) : null;
  }

  async markRunning(scope: Scope, sessionId: string, runId: string): Promise<FencedResult> {
    if (!isUuid(runId)) return 'fenced';
    // A run already `running` may be taken again (a worker died holding it): that is one more attempt.
    // FOR SHARE holds the session row so no end or pause can slip in between the fence check and the write.
    const count = await this.db.withTenant(
      scope,
      (tx) => tx.$executeRaw`
        UPDATE runs
           SET status = 'running', attempts = runs.attempts + 1,
               started_at = COALESCE(runs.started_at, now()), updated_at = now()
         WHERE runs.tenant_id = ${scope.tenantId}::uuid
           AND runs.status IN ('queued', 'running')
           AND runs.id = (SELECT sessions.active_run_id FROM sessions
                           WHERE ${whereSession(scope, sessionId)}
                             AND sessions.status = 'busy' AND sessions.active_run_id = ${runId}::uuid
                             FOR SHARE)`,
    );
    return count > 0 ? 'ok' : 'fenced';
  }

  async commit(scope: Scope, input: CommitInput): Promise<FencedResult> {
    if (!isUuid(input.runId)) return 'fenced';
    return this.db.withTenant(scope, async (tx): Promise<FencedResult> => {
      // 1. The fence, which also locks the session and reads its usage total (summed here with makeUsage, so a
      //    partial or `{}` stored usage counts its missing fields as zero, exactly as reads do).
      const [owner] = await tx.$queryRaw<{ usage: unknown }[]>`
        SELECT sessions.usage FROM sessions
         WHERE ${whereSession(scope, input.sessionId)} AND sessions.active_run_id = ${input.runId}::uuid
           FOR UPDATE`;
      if (!owner) return 'fenced';
      const usage = addUsage(toUsage(owner.usage), toUsage(input.usage));

      // 2. The append of the turn: nodes, run and session in one statement. Node parents inserted by the same
      //    statement satisfy the foreign key, which is checked once the statement ends.
      const appendNodes = input.nodes.length
        ? Prisma.sql`appended AS (
            INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage)
            VALUES ${Prisma.join(
              input.nodes.map(
                (n) => Prisma.sql`(${scope.tenantId}::uuid, ${input.sessionId}, ${n.id}::int,
                  ${n.parentId}::int, ${n.message.role}::message_role, ${json(n.message)}, ${jsonOrNull(n.usage)})`,
              ),
            )}
          ),`
        : Prisma.empty;
      const finishRun = input.finish
        ? Prisma.sql`status = 'completed', usage = ${json(toUsage(input.finish.usage))}, finished_at = now(),`
        : Prisma.empty;
      const finishSession = input.finish ? Prisma.sql`status = 'idle', active_run_id = NULL,` : Prisma.empty;
      await tx.$executeRaw`
        WITH ${appendNodes}
        finished_run AS (
          UPDATE runs SET rollback = NULL, ${finishRun} updated_at = now()
           WHERE runs.tenant_id = ${scope.tenantId}::uuid AND runs.id = ${input.runId}::uuid
        )
        UPDATE sessions
           SET ${setPosition(input.position)}, next_node_id = ${input.nextNodeId}::int, usage = ${json(usage)},
               ${finishSession} updated_at = now()
         WHERE ${whereSession(scope, input.sessionId)}`;
      return 'ok';
    });
  }

  async pauseRun(scope: Scope, sessionId: string, runId: string, pending: JsonObject): Promise<FencedResult> {
    return this.fencedWrite(
      scope,
      sessionId,
      runId,
      Prisma.sql`status = 'paused'`,
      Prisma.sql`status = 'paused', pending = ${json(pending)}`,
    );
  }

  async updatePausedRun(scope: Scope, input: UpdatePausedRunInput): Promise<UpdatePausedRunResult> {
    return this.db.withTenant(scope, async (tx): Promise<UpdatePausedRunResult> => {
      // Every writer of a run's pending state locks its session first, so after this lock the pending state
      // read by the next statement is the latest and stays so until we commit.
      const [session] = await tx.$queryRaw<SessionRow[]>`
        SELECT ${SESSION_COLUMNS} FROM sessions WHERE ${whereSession(scope, input.sessionId)} FOR UPDATE`;
      if (!session) return { ok: false, reason: 'not_found' };
      if (session.status !== 'paused' || session.active_run_id !== input.runId.toLowerCase()) {
        return { ok: false, reason: 'not_paused' };
      }
      const [run] = await tx.$queryRaw<RunRow[]>`
        UPDATE runs
           SET pending = ${json(input.pending)},
               ${input.resume ? Prisma.sql`status = 'running',` : Prisma.empty} updated_at = now()
         WHERE runs.tenant_id = ${scope.tenantId}::uuid AND runs.id = ${input.runId}::uuid
           AND runs.pending = ${json(input.expectedPending)}
        RETURNING ${RUN_COLUMNS}`;
      if (!run) return { ok: false, reason: 'conflict' };
      if (!input.resume) return { ok: true, run: toRun(run), session: toSession(session) };
      const [resumed] = await tx.$queryRaw<SessionRow[]>`
        UPDATE sessions SET status = 'busy', updated_at = now()
         WHERE ${whereSession(scope, input.sessionId)}
        RETURNING ${SESSION_COLUMNS}`;
      return { ok: true, run: toRun(run), session: toSession(mustHave(resumed, 'session')) };
    });
  }

  async endRun(scope: Scope, input: EndRunInput): Promise<FencedResult> {
    const restore = input.restore ? Prisma.sql`, ${setPosition(input.restore)}` : Prisma.empty;
    return this.fencedWrite(
      scope,
      input.sessionId,
      input.runId,
      Prisma.sql`status = 'idle', active_run_id = NULL ${restore}`,
      Prisma.sql`status = ${input.status}::run_status, error = ${jsonOrNull(input.error)},
                 usage = ${json(toUsage(input.usage))}, finished_at = now()`,
    );
  }

  async stageSteer(scope: Scope, sessionId: string, prompt: JsonObject): Promise<{ runId: string } | null> {
    // FOR SHARE: a run ending concurrently either waits for this staging or makes it find the session idle.
    const [row] = await this.db.withTenant(
      scope,
      (tx) => tx.$queryRaw<{ id: string }[]>`
        UPDATE runs SET steer = ${json(prompt)}, updated_at = now()
         WHERE runs.tenant_id = ${scope.tenantId}::uuid
           AND runs.id = (SELECT sessions.active_run_id FROM sessions
                           WHERE ${whereSession(scope, sessionId)} AND sessions.status IN ('busy', 'paused')
                             FOR SHARE)
        RETURNING runs.id::text AS id`,
    );
    return row ? { runId: row.id } : null;
  }

  async takeSteer(scope: Scope, runId: string): Promise<JsonObject | null> {
    if (!isUuid(runId)) return null;
    // The locked sub-select yields the value as it was before this UPDATE cleared it: read and clear in one go.
    const [row] = await this.db.withTenant(
      scope,
      (tx) => tx.$queryRaw<{ steer: unknown }[]>`
        UPDATE runs SET steer = NULL, updated_at = now()
          FROM (SELECT runs.id, runs.steer FROM runs
                 WHERE runs.tenant_id = ${scope.tenantId}::uuid AND runs.id = ${runId}::uuid
                   AND runs.steer IS NOT NULL ${runUserFilter(scope)}
                   FOR UPDATE) AS taken
         WHERE runs.id = taken.id
        RETURNING taken.steer`,
    );
    return row ? jsonObject(row.steer) : null;
  }

  async unfinishedRuns(): Promise<
    Array<{ tenantId: string; sessionId: string; runId: string; status: RunStatus }>
  > {
    const rows = await this.db.withAdmin(
      'recovery: runs left unfinished in every tenant',
      (tx) => tx.$queryRaw<{ tenant_id: string; session_id: string; id: string; status: RunStatus }[]>`
        SELECT runs.tenant_id::text AS tenant_id, runs.session_id, runs.id::text AS id, runs.status::text AS status
          FROM runs
         WHERE runs.status IN ('queued', 'running', 'paused')
         ORDER BY runs.created_at, runs.id`,
    );
    return rows.map((r) => ({
      tenantId: r.tenant_id,
      sessionId: r.session_id,
      runId: r.id,
      status: r.status,
    }));
  }

  /**
   * Writes the session and its run, fenced on the run still being the session's active run: the session update
   * (which locks the row) decides, and the run is written only from its result, so a fenced call writes nothing.
   */
  private async fencedWrite(
    scope: Scope,
    sessionId: string,
    runId: string,
    setSession: Prisma.Sql,
    setRun: Prisma.Sql,
  ): Promise<FencedResult> {
    if (!isUuid(runId)) return 'fenced';
    const count = await this.db.withTenant(
      scope,
      (tx) => tx.$executeRaw`
        WITH fenced AS (
          UPDATE sessions SET ${setSession}, updated_at = now()
           WHERE ${whereSession(scope, sessionId)} AND sessions.active_run_id = ${runId}::uuid
          RETURNING sessions.tenant_id
        )
        UPDATE runs SET ${setRun}, updated_at = now()
          FROM fenced
         WHERE runs.tenant_id = fenced.tenant_id AND runs.id = ${runId}::uuid`,
    );
    return count > 0 ? 'ok' : 'fenced';
  }
}

/** The session by id in the scope's tenant, and only the scope's user's when it has one. */
function whereSession(scope: Scope, id: string): Prisma.Sql {
  return Prisma.sql`sessions.tenant_id = ${scope.tenantId}::uuid AND sessions.id = ${id} ${userFilter(scope)}`;
}

function userFilter(scope: Scope): Prisma.Sql {
  // A session with no user (user_id NULL) never equals a user: invisible to user scopes, as it should be.
  return scope.userId === undefined ? Prisma.empty : Prisma.sql`AND sessions.user_id = ${scope.userId}`;
}

/** Runs of other users' sessions are as invisible as the sessions. */
function runUserFilter(scope: Scope): Prisma.Sql {
  return scope.userId === undefined
    ? Prisma.empty
    : Prisma.sql`AND EXISTS (SELECT 1 FROM sessions
                              WHERE sessions.tenant_id = runs.tenant_id AND sessions.id = runs.session_id
                                AND sessions.user_id = ${scope.userId})`;
}

/** Locks the session row and answers its status (null: no such session for this scope). */
async function lockStatus(tx: Tx, scope: Scope, id: string): Promise<SessionStatus | null> {
  const [row] = await tx.$queryRaw<{ status: SessionStatus }[]>`
    SELECT sessions.status::text AS status FROM sessions WHERE ${whereSession(scope, id)} FOR UPDATE`;
  return row?.status ?? null;
}

function setPosition(position: PositionRecord): Prisma.Sql {
  return Prisma.sql`path = ${position.path}::int[], cursors = ${json(position.cursors)}, head = ${position.head}::int`;
}

function refusal(status: 'busy' | 'paused'): CanopyException {
  return status === 'paused'
    ? new CanopyException('session_paused', 'the session is paused, awaiting a decision')
    : new CanopyException('session_busy', 'the session is busy with a run');
}

function mustHave<T>(value: T | undefined, what: string): T {
  // Only reachable if a row we hold locked vanished: a bug, not a user error.
  if (value === undefined) throw new Error(`${what} row missing inside its own transaction`);
  return value;
}

// JSON travels as text and is cast, so Postgres (not the driver) decides how it is stored.
function json(value: unknown): Prisma.Sql {
  return Prisma.sql`${JSON.stringify(value)}::jsonb`;
}

function jsonOrNull(value: unknown): Prisma.Sql {
  return value === null || value === undefined ? Prisma.sql`NULL::jsonb` : json(value);
}

// Cursor: the last row's sort key. Opaque to clients; anything we did not make is a bad request.

function encodeCursor(session: SessionRecord): string {
  return Buffer.from(JSON.stringify({ updatedAt: session.updatedAt.toISOString(), id: session.id })).toString(
    'base64url',
  );
}

function decodeCursor(cursor: string): { updatedAt: string; id: string } {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (parsed !== null && typeof parsed === 'object') {
      const { updatedAt, id } = parsed as { updatedAt?: unknown; id?: unknown };
      if (typeof updatedAt === 'string' && typeof id === 'string') {
        const at = new Date(updatedAt);
        const iso = Number.isNaN(at.getTime()) ? '' : at.toISOString();
        if (/^\d{4}-/.test(iso)) return { updatedAt: iso, id };
      }
    }
  } catch {
    // fall through: not base64url JSON
  }
  throw CanopyException.badRequest('invalid cursor', { cursor });
}

// Rows to domain records. Json columns are checked for their shape, not trusted: a row written by hand or by an
// older version still reads as a well-formed record.

function toSession(row: SessionRow): SessionRecord {
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
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toRun(row: RunRow): RunRecord {
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
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  };
}

function jsonObject(value: unknown): JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : {};
}

/** A complete Usage from whatever is stored; `{}` (the column default) is zero usage. */
function toUsage(value: unknown): Usage {
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

function toError(value: unknown): { code: string; message: string } | null {
  if (value === null || typeof value !== 'object') return null;
  const { code, message } = value as { code?: unknown; message?: unknown };
  return {
    code: typeof code === 'string' ? code : 'internal',
    message: typeof message === 'string' ? message : '',
  };
}
