// The Postgres adapter of the SessionStore port: sessions, their tree nodes and their runs. Every method runs in
// one tenant transaction and speaks SQL directly, so each state change is one visible, conditional statement
// (compare-and-set on status / active_run_id). The schema is Prisma's, but the statements go over node-postgres
// (Database.withTenantSql): a Prisma interactive transaction costs several times the CPU of the statements it
// carries. The hot path of a run (startRun, loadRun, commit) goes further: each is ONE call of a SQL function
// (canopy_start_run, canopy_load_run, canopy_commit in prisma/functions/) sent in autocommit
// by Database.callSql, one round trip where BEGIN ... COMMIT took three or four (each socket write costs the
// engine ~140 µs of CPU on a small VM). Those functions hold the SQL of these three methods. Rows become domain
// records in session-rows.ts; no database type leaves the store.

import { randomBytes, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CanopyException } from '@canopy/common';
import {
  actorOf,
  parseActor,
  type ContextMeter,
  type ContextSummary,
  type ConversationSummary,
  type NodeId,
  type RunStatus,
  type Scope,
  type SessionStatus,
  type TreeNode,
  type Usage,
} from '@canopy/core';
import { Database, isUuid, type SqlTx } from './database';
import { runsQuotaStatus, type RunsQuotaRow } from './quota-status';
import { empty, join, query, raw, sql, type Sql } from './sql';
import { filterConditions } from './session-filters';
import {
  SESSION_COLUMNS,
  RUN_COLUMNS,
  sessionAndRunOf,
  sessionOf,
  type Nullable,
  type SessionRow,
  type RunRow,
  type PrefixedRunRow,
  type NodeJson,
  type PathNodeJson,
  type StartedRow,
  json,
  jsonOrNull,
  encodeCursor,
  decodeCursor,
  toSession,
  runFrom,
  toRun,
  toNode,
  jsonObject,
  toUsage,
  SUMMARY_JSON,
  toSummary,
  type SummaryJson,
} from './session-rows';
import { failedRegenerations, type FailedTurn } from './turn-runs';
import type {
  ClientRunRecord,
  CommitInput,
  CommitResult,
  CreateSessionInput,
  EndRunInput,
  FencedResult,
  JsonObject,
  ListSessionsQuery,
  PathLoad,
  PathPart,
  PositionRecord,
  QueuedPromptRecord,
  QueuedRunRecord,
  QueueMode,
  RunContext,
  RunRecord,
  SaveSummaryInput,
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

@Injectable()
export class PostgresSessionStore implements SessionStore {
  constructor(private readonly db: Database) {}

  // Sessions

  async create(scope: Scope, input: CreateSessionInput): Promise<SessionRecord> {
    const id = input.id ?? randomBytes(16).toString('base64url');
    // A user token creates sessions for its own user only: anything else would be invisible to its creator.
    const userId = scope.userId ?? input.userId ?? null;
    // One statement in autocommit (canopy_create_session: ON CONFLICT keeps create-if-absent atomic); no row back
    // means the id is taken in this tenant.
    const statement = sql`
      SELECT ${SESSION_COLUMNS}
        FROM canopy_create_session(${scope.tenantId}::uuid, ${id}::text, ${userId}::text, ${input.title ?? null}::text,
                                   ${input.model}::text, ${input.system ?? null}::text, ${json(input.opts ?? {})},
                                   ${json(input.tools ?? [])}, ${json(input.metadata ?? {})},
                                   ${input.idleShutdownAfterMs ?? null}::int, ${this.db.txTimeoutMs}::int) AS sessions`;
    const [row] = await this.db.callSql<SessionRow>(scope, statement.text, statement.values);
    if (!row) throw new CanopyException('already_exists', `session ${id} already exists`, { id });
    return toSession(row);
  }

  async get(scope: Scope, id: string): Promise<SessionRecord | null> {
    const [row] = await this.db.withTenantSql(scope, (tx) => sessionRows(tx, scope, id));
    return row ? toSession(row) : null;
  }

  async getWithQueue(
    scope: Scope,
    id: string,
  ): Promise<{ session: SessionRecord; queued: QueuedPromptRecord[] } | null> {
    // One transaction of two statements (four round trips with BEGIN and COMMIT, where get and queuedPrompts
    // apart took six); READ COMMITTED gives each statement its own snapshot, taken in this order.
    return this.db.withTenantSql(scope, async (tx) => {
      const queued = await queuedRows(tx, scope, id);
      const [row] = await sessionRows(tx, scope, id);
      return row ? { session: toSession(row), queued } : null;
    });
  }

  async exists(scope: Scope, id: string): Promise<boolean> {
    const [row] = await this.db.withTenantSql(scope, (tx) =>
      query<{ found: boolean }>(
        tx,
        sql`SELECT EXISTS (SELECT 1 FROM sessions WHERE ${whereSession(scope, id)}) AS found`,
      ),
    );
    return row?.found === true;
  }

  async loadTree(scope: Scope, id: string): Promise<{ session: SessionRecord; nodes: TreeNode[] } | null> {
    // One statement in autocommit (canopy_load_tree): the session row and its whole tree, in id order (a fork's
    // shared nodes included), both read on the statement's snapshot.
    const statement = sql`
      SELECT ${sessionOf('loaded')}, loaded.nodes
        FROM canopy_load_tree(${scope.tenantId}::uuid, ${scope.userId ?? null}::text, ${id}::text,
                              ${this.db.txTimeoutMs}::int) AS loaded`;
    const [row] = await this.db.callSql<Nullable<SessionRow> & { nodes: NodeJson[] | null }>(
      scope,
      statement.text,
      statement.values,
    );
    if (!row?.id || !row.nodes) return null;
    return { session: toSession(row as SessionRow), nodes: row.nodes.map(toNode) };
  }

  async list(scope: Scope, listQuery: ListSessionsQuery): Promise<SessionPage> {
    // The service validates the limit; clamping here only keeps a bad caller from asking for everything.
    const limit = Math.min(MAX_PAGE, Math.max(1, Math.trunc(listQuery.limit) || 1));
    const after = listQuery.cursor ? decodeCursor(listQuery.cursor) : null;
    const { limit: _limit, cursor: _cursor, ...filter } = listQuery;
    const conditions = filterConditions(scope, filter);
    if (after) {
      conditions.push(
        sql`(sessions.updated_at, sessions.id) < (${after.updatedAt}::timestamptz, ${after.id}::text)`,
      );
    }
    // One row past the page tells whether another page follows.
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query<SessionRow>(
        tx,
        sql`
        SELECT ${SESSION_COLUMNS}
          FROM sessions
         WHERE ${join(conditions, ' AND ')}
         ORDER BY sessions.updated_at DESC, sessions.id DESC
         LIMIT ${limit + 1}::int`,
      ),
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
    const fields: Array<[column: string, value: Sql]> = [];
    if (patch.title !== undefined) fields.push(['title', sql`${patch.title}::text`]);
    if (patch.model !== undefined) fields.push(['model', sql`${patch.model}::text`]);
    if (patch.system !== undefined) fields.push(['system', sql`${patch.system}::text`]);
    if (patch.opts !== undefined) fields.push(['opts', json(patch.opts)]);
    if (patch.tools !== undefined) fields.push(['tools', json(patch.tools)]);
    if (patch.metadata !== undefined) fields.push(['metadata', json(patch.metadata)]);
    if (patch.pinned !== undefined) fields.push(['pinned', sql`${patch.pinned}::boolean`]);
    // jsonb `IS DISTINCT FROM` compares values, not text: a metadata object with its keys reordered is unchanged.
    const differs = fields.length
      ? join(
          fields.map(([column, value]) => sql`sessions.${raw(column)} IS DISTINCT FROM ${value}`),
          ' OR ',
        )
      : raw('FALSE');
    const idle = options.idleOnly ? raw(`AND sessions.status = 'idle'`) : empty;

    return this.db.withTenantSql(scope, async (tx) => {
      const write = () =>
        query<SessionRow>(
          tx,
          sql`
          UPDATE sessions
             SET ${join(
               fields.map(([column, value]) => sql`${raw(column)} = ${value}`),
               ', ',
             )}, updated_at = now()
           WHERE ${whereSession(scope, id)} ${idle} AND (${differs})
          RETURNING ${SESSION_COLUMNS}`,
        );
      // The common case is one conditional UPDATE; only when it touches nothing do we look at why.
      if (fields.length) {
        const [written] = await write();
        if (written) return { session: toSession(written), changed: true };
      }
      const [current] = await query<SessionRow & { differs: boolean }>(
        tx,
        sql`
        SELECT ${SESSION_COLUMNS}, (${differs}) AS differs
          FROM sessions
         WHERE ${whereSession(scope, id)}
           FOR UPDATE`,
      );
      if (!current) throw CanopyException.notFound('session');
      if (options.idleOnly && current.status !== 'idle') throw refusal(current.status);
      if (!current.differs) return { session: toSession(current), changed: false };
      // The session went idle between the two statements; we hold its lock now, so this write cannot miss.
      const [written] = await write();
      return { session: toSession(mustHave(written, 'session')), changed: true };
    });
  }

  async savePosition(scope: Scope, id: string, position: PositionRecord): Promise<SessionRecord> {
    return this.db.withTenantSql(scope, async (tx) => {
      const write = () =>
        query<SessionRow>(
          tx,
          sql`
          UPDATE sessions SET ${setPosition(position)}, updated_at = now()
           WHERE ${whereSession(scope, id)} AND sessions.status = 'idle'
          RETURNING ${SESSION_COLUMNS}`,
        );
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
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query(tx, sql`DELETE FROM sessions WHERE ${whereSession(scope, id)} RETURNING 1 AS deleted`),
    );
    return rows.length > 0;
  }

  async saveContextMeter(
    scope: Scope,
    id: string,
    head: NodeId | null,
    meter: ContextMeter,
  ): Promise<boolean> {
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query(
        tx,
        sql`UPDATE sessions SET context_meter = ${json(meter)}
             WHERE ${whereSession(scope, id)} AND sessions.head IS NOT DISTINCT FROM ${head}::int
            RETURNING 1 AS saved`,
      ),
    );
    return rows.length > 0;
  }

  // Runs

  async startRun(scope: Scope, input: StartRunInput): Promise<StartRunResult> {
    // canopy_start_run: the tenant's limit of busy sessions, the runs quotas (counted under a lock on their rows),
    // the compare-and-set on status (only an idle session starts a run; of racing starts one wins) and the run
    // inserted from the claimed row, or why nothing was.
    const [row] = await this.call<
      {
        outcome: 'ok' | 'not_found' | 'busy' | 'paused' | 'rate_limited' | 'quota_exceeded';
        busy: number | null;
        quota: RunsQuotaRow | null;
      } & StartedRow
    >(
      scope,
      sql`
      SELECT started.outcome, started.busy, started.quota, ${sessionAndRunOf('started')}
        FROM canopy_start_run(${scope.tenantId}::uuid, ${scope.userId ?? null}::text, ${input.sessionId}::text,
                              ${input.runId ?? randomUUID()}::uuid, ${input.kind}::run_kind, ${json(input.input)},
                              ${input.status}::run_status, ${jsonOrNull(input.position)},
                              ${jsonOrNull(input.rollback)}, ${this.db.txTimeoutMs}::int,
                              ${input.maxBusy ?? null}::int, ${json(actorOf(scope))}) AS started`,
    );
    const { outcome, busy, quota } = mustHave(row, 'canopy_start_run result');
    const counted = busy === null ? {} : { busy };
    if (outcome === 'quota_exceeded') {
      return {
        ok: false,
        reason: outcome,
        quota: runsQuotaStatus(mustHave(quota ?? undefined, 'quota')),
        ...counted,
      };
    }
    if (outcome !== 'ok') return { ok: false, reason: outcome, ...counted };
    const started = row as SessionRow & PrefixedRunRow;
    return { ok: true, run: toRun(runFrom(started)), session: toSession(started), ...counted };
  }

  async getRun(scope: Scope, runId: string): Promise<RunRecord | null> {
    if (!isUuid(runId)) return null;
    const [row] = await this.db.withTenantSql(scope, (tx) =>
      query<RunRow>(
        tx,
        sql`
        SELECT ${RUN_COLUMNS} FROM runs
         WHERE runs.tenant_id = ${scope.tenantId}::uuid AND runs.id = ${runId}::uuid ${runUserFilter(scope)}`,
      ),
    );
    return row ? toRun(row) : null;
  }

  async getRunOrQueued(
    scope: Scope,
    runId: string,
  ): Promise<{ run: RunRecord } | { queued: QueuedRunRecord } | null> {
    if (!isUuid(runId)) return null;
    return this.db.withTenantSql(scope, async (tx) => {
      // The queue first: a drain starts the prompt's run before it takes the prompt out, so a prompt missing from
      // the queue here is, by the next statement, a run or gone (taken out before its turn, or dropped).
      const [entry] = await query<{
        id: string;
        session_id: string;
        mode: QueueMode;
        input: unknown;
        actor: unknown;
        created_at: Date;
        position: number;
      }>(
        tx,
        sql`
        SELECT q.id::text AS id, q.session_id, q.mode, q.input, q.actor, q.created_at,
               (SELECT count(*)::int FROM queued_prompts ahead
                 WHERE ahead.tenant_id = q.tenant_id AND ahead.session_id = q.session_id
                   AND (ahead.front > q.front OR (ahead.front = q.front AND ahead.seq <= q.seq))) AS position
          FROM queued_prompts q JOIN sessions ON sessions.tenant_id = q.tenant_id AND sessions.id = q.session_id
         WHERE q.tenant_id = ${scope.tenantId}::uuid AND q.id = ${runId}::uuid ${userFilter(scope)}`,
      );
      const [row] = await query<RunRow>(
        tx,
        sql`
        SELECT ${RUN_COLUMNS} FROM runs
         WHERE runs.tenant_id = ${scope.tenantId}::uuid AND runs.id = ${runId}::uuid ${runUserFilter(scope)}`,
      );
      if (row) return { run: toRun(row) };
      if (!entry) return null;
      return {
        queued: {
          id: entry.id,
          sessionId: entry.session_id,
          mode: entry.mode,
          input: jsonObject(entry.input),
          actor: parseActor(entry.actor),
          createdAt: entry.created_at,
          position: entry.position,
        },
      };
    });
  }

  async loadRun(
    scope: Scope,
    sessionId: string,
    runId: string,
    maxNodes?: number,
  ): Promise<RunContext | null> {
    if (!isUuid(runId)) return null;
    // canopy_load_run: the session the run must own, locked FOR SHARE (no end, pause or commit slips in, and the
    // row read is the latest); the run taken (queued -> running, or a running one taken over: one more attempt
    // either way); the nodes of the active path in path order, read after the lock so none committed before it
    // is missed (none when the path is longer than maxNodes: pathTail reads those). All NULL when there is
    // nothing to execute.
    const [row] = await this.call<StartedRow & { path_nodes: PathNodeJson[] | null }>(
      scope,
      sql`
      SELECT ${sessionAndRunOf('taken')}, taken.path_nodes
        FROM canopy_load_run(${scope.tenantId}::uuid, ${scope.userId ?? null}::text, ${sessionId}::text,
                             ${runId}::uuid, ${this.db.txTimeoutMs}::int, ${maxNodes ?? null}::int) AS taken`,
    );
    if (row?.id == null) return null;
    const taken = row as SessionRow & PrefixedRunRow & { path_nodes: PathNodeJson[] | null };
    const nodes = taken.path_nodes;
    return {
      session: toSession(taken),
      run: toRun(runFrom(taken)),
      pathNodes: nodes?.map(toNode) ?? null,
      ...(nodes ? { pathTokens: nodes.map((n) => n.tokens ?? null) } : {}),
    };
  }

  async pathTail(
    scope: Scope,
    sessionId: string,
    path: readonly NodeId[] | null,
    load: PathLoad,
  ): Promise<PathPart> {
    // canopy_path_tail: one call (autocommit), walking the path from its ends by primary key.
    const [row] = await this.call<{
      nodes: Array<PathNodeJson & { position: number; counted?: number }> | null;
    }>(
      scope,
      sql`
      SELECT canopy_path_tail(${scope.tenantId}::uuid, ${sessionId}::text, ${path ? [...path] : null}::int[],
                              ${load.tailTokens}::int, ${load.headTurns}::int, ${load.fromSummary}::boolean,
                              ${this.db.txTimeoutMs}::int) AS nodes`,
    );
    const nodes = row?.nodes ?? [];
    return {
      nodes: nodes.map(toNode),
      tokens: nodes.map((n) => n.tokens ?? null),
      positions: nodes.map((n) => n.position - 1),
      counted: nodes.map((n) => n.counted ?? null),
    };
  }

  async commit(scope: Scope, input: CommitInput): Promise<CommitResult> {
    if (!isUuid(input.runId)) return { status: 'fenced' };
    // canopy_commit: the fence on active_run_id (which also locks the session), the nodes (NewNode as JSON is the
    // shape it reads), the run (rollback and pending cleared; with finish, ended unless a steered prompt is
    // staged, which is taken and handed back) and the session (position, next node id, usage total summed like
    // addUsage; idle when the run ended, and titled when it ended untitled and a title was given) and, when the
    // run ended, whether prompts wait in the session's queue.
    const commit = (position: JsonObject) =>
      this.call<{
        outcome: 'ok' | 'fenced' | 'stale_path';
        steer: unknown;
        titled: boolean;
        queued: boolean;
      }>(
        scope,
        sql`
        SELECT committed.outcome, committed.steer, committed.titled, committed.queued
          FROM canopy_commit(${scope.tenantId}::uuid, ${scope.userId ?? null}::text, ${input.sessionId}::text,
                             ${input.runId}::uuid, ${json(input.nodes)},
                             ${json(input.contextMeter ? { ...position, context_meter: input.contextMeter } : position)},
                             ${input.nextNodeId}::int, ${json(toUsage(input.usage))},
                             ${input.finish ? json(finishArgument(input.finish)) : raw('NULL::jsonb')},
                             ${this.db.txTimeoutMs}::int,
                             ${input.finish && input.title ? input.title : null}::text) AS committed`,
      );
    let [row] = await commit(positionArgument(input.position, input.storedPath));
    // The stored path was not the one the caller knew (nothing was written): the position goes whole.
    if (row?.outcome === 'stale_path') [row] = await commit(positionArgument(input.position));
    const { outcome, steer, titled, queued } = mustHave(row, 'canopy_commit result');
    if (outcome !== 'ok') return { status: 'fenced' };
    return { status: 'ok', steer: steer === null ? null : jsonObject(steer), titled, queued };
  }

  async pauseRun(
    scope: Scope,
    sessionId: string,
    runId: string,
    pending: JsonObject,
    usage?: Usage,
  ): Promise<FencedResult> {
    const setUsage = usage ? sql`, usage = ${json(toUsage(usage))}` : empty;
    return this.fencedWrite(
      scope,
      sessionId,
      runId,
      sql`status = 'paused'`,
      sql`status = 'paused', pending = ${json(pending)} ${setUsage}`,
    );
  }

  async updatePausedRun(scope: Scope, input: UpdatePausedRunInput): Promise<UpdatePausedRunResult> {
    return this.db.withTenantSql(scope, async (tx): Promise<UpdatePausedRunResult> => {
      // Every writer of a run's pending state locks its session first, so after this lock the pending state
      // read by the next statement is the latest and stays so until we commit.
      const [session] = await query<SessionRow>(
        tx,
        sql`SELECT ${SESSION_COLUMNS} FROM sessions WHERE ${whereSession(scope, input.sessionId)} FOR UPDATE`,
      );
      if (!session) return { ok: false, reason: 'not_found' };
      if (session.status !== 'paused' || session.active_run_id !== input.runId.toLowerCase()) {
        return { ok: false, reason: 'not_paused' };
      }
      const [run] = await query<RunRow>(
        tx,
        sql`
        UPDATE runs
           SET pending = ${json(input.pending)},
               ${input.resume ? raw(`status = 'running',`) : empty} updated_at = now()
         WHERE runs.tenant_id = ${scope.tenantId}::uuid AND runs.id = ${input.runId}::uuid
           AND runs.pending = ${json(input.expectedPending)}
        RETURNING ${RUN_COLUMNS}`,
      );
      if (!run) return { ok: false, reason: 'conflict' };
      if (!input.resume) return { ok: true, run: toRun(run), session: toSession(session) };
      const [resumed] = await query<SessionRow>(
        tx,
        sql`
        UPDATE sessions SET status = 'busy', updated_at = now()
         WHERE ${whereSession(scope, input.sessionId)}
        RETURNING ${SESSION_COLUMNS}`,
      );
      return { ok: true, run: toRun(run), session: toSession(mustHave(resumed, 'session')) };
    });
  }

  async endRun(scope: Scope, input: EndRunInput): Promise<FencedResult> {
    const restore = input.restore ? sql`, ${setPosition(input.restore)}` : empty;
    const setSession = sql`status = 'idle', active_run_id = NULL ${restore}`;
    const setRun = sql`status = ${input.status}::run_status, error = ${jsonOrNull(input.error)},
          usage = ${json(toUsage(input.usage))}, finished_at = now()`;
    const kept = input.commit;
    if (!kept) return this.fencedWrite(scope, input.sessionId, input.runId, setSession, setRun);
    if (!isUuid(input.runId)) return 'fenced';
    // An interrupted run: its nodes go in through canopy_commit (fenced, the session locked, the run going on),
    // then the run ends, both in one transaction: written once, or not at all when the run lost the session.
    return this.db.withTenantSql(scope, async (tx) => {
      const [row] = await query<{ outcome: 'ok' | 'fenced' }>(
        tx,
        sql`
        SELECT committed.outcome
          FROM canopy_commit(${scope.tenantId}::uuid, ${scope.userId ?? null}::text, ${input.sessionId}::text,
                             ${input.runId}::uuid, ${json(kept.nodes)}, ${json(kept.position)},
                             ${kept.nextNodeId}::int, ${json(toUsage(kept.usage))}, NULL::jsonb,
                             ${this.db.txTimeoutMs}::int, NULL::text) AS committed`,
      );
      if (mustHave(row, 'canopy_commit result').outcome === 'fenced') return 'fenced';
      return fencedUpdate(tx, scope, input.sessionId, input.runId, setSession, setRun);
    });
  }

  async stageSteer(scope: Scope, sessionId: string, prompt: JsonObject): Promise<{ runId: string } | null> {
    // FOR SHARE: a run ending concurrently either waits for this staging or makes it find the session idle. The
    // steer records who sent it: its turn acts in their scope.
    const [row] = await this.db.withTenantSql(scope, (tx) =>
      query<{ id: string }>(
        tx,
        sql`
        UPDATE runs SET steer = ${json({ ...prompt, actor: actorOf(scope) })}, updated_at = now()
         WHERE runs.tenant_id = ${scope.tenantId}::uuid
           AND runs.id = (SELECT sessions.active_run_id FROM sessions
                           WHERE ${whereSession(scope, sessionId)} AND sessions.status IN ('busy', 'paused')
                             FOR SHARE)
        RETURNING runs.id::text AS id`,
      ),
    );
    return row ? { runId: row.id } : null;
  }

  async enqueuePrompt(
    scope: Scope,
    sessionId: string,
    entry: { id: string; mode: QueueMode; input: JsonObject },
  ): Promise<boolean> {
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query<{ id: string }>(
        tx,
        sql`
        INSERT INTO queued_prompts (id, tenant_id, session_id, mode, front, input, actor)
        SELECT ${entry.id}::uuid, sessions.tenant_id, sessions.id, ${entry.mode}, ${entry.mode !== 'enqueue'},
               ${json(entry.input)}, ${json(actorOf(scope))}
          FROM sessions WHERE ${whereSession(scope, sessionId)}
        RETURNING id::text AS id`,
      ),
    );
    return rows.length > 0;
  }

  queuedPrompts(scope: Scope, sessionId: string): Promise<QueuedPromptRecord[]> {
    return this.db.withTenantSql(scope, (tx) => queuedRows(tx, scope, sessionId));
  }

  async dequeuePrompt(scope: Scope, sessionId: string, id: string): Promise<boolean> {
    if (!isUuid(id)) return false;
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query<{ id: string }>(
        tx,
        sql`
        DELETE FROM queued_prompts q USING sessions
         WHERE q.id = ${id}::uuid AND q.tenant_id = ${scope.tenantId}::uuid AND q.session_id = ${sessionId}::text
           AND sessions.tenant_id = q.tenant_id AND sessions.id = q.session_id ${userFilter(scope)}
        RETURNING q.id::text AS id`,
      ),
    );
    return rows.length > 0;
  }

  async attachPointOf(
    scope: Scope,
    sessionId: string,
    runId: string,
  ): Promise<{ nodeId: NodeId | null } | null> {
    if (!isUuid(runId)) return null;
    // The run's first node on the path: one the run committed, so a real row of `nodes` (a fork's shared nodes,
    // read through canopy_session_nodes elsewhere, are older than any of its runs and could never match).
    const [row] = await this.db.withTenantSql(scope, (tx) =>
      query<{ parent_id: number | null }>(
        tx,
        sql`
        SELECT nodes.parent_id
          FROM sessions
          JOIN runs ON runs.tenant_id = sessions.tenant_id AND runs.session_id = sessions.id
                   AND runs.id = ${runId}::uuid
          JOIN nodes ON nodes.tenant_id = sessions.tenant_id AND nodes.session_id = sessions.id
                    AND nodes.id = ANY (sessions.path) AND nodes.created_at >= runs.created_at
         WHERE ${whereSession(scope, sessionId)}
         ORDER BY nodes.id
         LIMIT 1`,
      ),
    );
    return row ? { nodeId: row.parent_id } : null;
  }

  async idleSessionsWithQueue(): Promise<Array<{ tenantId: string; sessionId: string }>> {
    const rows = await this.db.withAdminSql(
      'recovery: queued prompts of idle sessions in every tenant',
      (tx) =>
        tx.query<{ tenant_id: string; session_id: string }>(
          `SELECT DISTINCT q.tenant_id::text AS tenant_id, q.session_id
           FROM queued_prompts q JOIN sessions s ON s.tenant_id = q.tenant_id AND s.id = q.session_id
          WHERE s.status = 'idle'`,
        ),
    );
    return rows.map((r) => ({ tenantId: r.tenant_id, sessionId: r.session_id }));
  }

  failedTurns(scope: Scope, sessionId: string): Promise<FailedTurn[]> {
    return this.db.withTenantSql(scope, (tx) => failedRegenerations(tx, scope, sessionId));
  }

  async setClientRunId(
    scope: Scope,
    sessionId: string,
    runId: string,
    clientRunId: string,
  ): Promise<boolean> {
    if (!isUuid(runId)) return false;
    // Not a column the run's triggers watch (usage, status, finished_at): no rollup or webhook follows.
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query<{ id: string }>(
        tx,
        sql`
        UPDATE runs SET client_run_id = ${clientRunId}::text
         WHERE runs.tenant_id = ${scope.tenantId}::uuid AND runs.session_id = ${sessionId}::text
           AND runs.id = ${runId}::uuid ${runUserFilter(scope)}
        RETURNING runs.id::text AS id`,
      ),
    );
    return rows.length > 0;
  }

  async runByClientId(scope: Scope, sessionId: string, clientRunId: string): Promise<ClientRunRecord | null> {
    // runs_client_run_idx: (tenant_id, session_id, client_run_id), the runs that have one.
    const [row] = await this.db.withTenantSql(scope, (tx) =>
      query<{ id: string; head_node: number | null }>(
        tx,
        sql`
        SELECT runs.id::text AS id, runs.head_node
          FROM runs
         WHERE runs.tenant_id = ${scope.tenantId}::uuid AND runs.session_id = ${sessionId}::text
           AND runs.client_run_id = ${clientRunId}::text ${runUserFilter(scope)}
         ORDER BY runs.created_at DESC
         LIMIT 1`,
      ),
    );
    return row ? { runId: row.id, headNode: row.head_node } : null;
  }

  async summariesOn(scope: Scope, sessionId: string, nodeIds: readonly number[]): Promise<ContextSummary[]> {
    if (nodeIds.length === 0) return [];
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query<{ through_node_id: number; text: string; tokens: number }>(
        tx,
        sql`SELECT c.through_node_id, c.text, c.tokens
              FROM context_summaries c JOIN sessions ON sessions.tenant_id = c.tenant_id AND sessions.id = c.session_id
             WHERE ${whereSession(scope, sessionId)} AND c.through_node_id = ANY(${[...nodeIds]}::int[])
             ORDER BY c.through_node_id`,
      ),
    );
    return rows.map((r) => ({ throughNodeId: r.through_node_id, text: r.text, tokens: r.tokens }));
  }

  async saveSummary(scope: Scope, input: SaveSummaryInput): Promise<boolean> {
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query<{ saved: boolean }>(
        tx,
        sql`INSERT INTO context_summaries (tenant_id, session_id, through_node_id, text, tokens, model, usage)
            SELECT sessions.tenant_id, sessions.id, ${input.throughNodeId}::int, ${input.text}::text,
                   ${input.tokens}::int, ${input.model}::text, ${JSON.stringify(input.usage)}::jsonb
              FROM sessions
             WHERE ${whereSession(scope, input.sessionId)}
            ON CONFLICT (tenant_id, session_id, through_node_id) DO NOTHING
            RETURNING true AS saved`,
      ),
    );
    return rows.length > 0;
  }

  async summariesOf(scope: Scope, sessionId: string): Promise<ConversationSummary[]> {
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query<{ summary: SummaryJson }>(
        tx,
        sql`SELECT ${SUMMARY_JSON} AS summary
              FROM context_summaries c JOIN sessions ON sessions.tenant_id = c.tenant_id AND sessions.id = c.session_id
             WHERE ${whereSession(scope, sessionId)}
             ORDER BY c.through_node_id`,
      ),
    );
    return rows.map((r) => toSummary(r.summary));
  }

  async unfinishedRuns(): Promise<
    Array<{ tenantId: string; sessionId: string; runId: string; status: RunStatus }>
  > {
    const rows = await this.db.withAdminSql('recovery: runs left unfinished in every tenant', (tx) =>
      tx.query<{ tenant_id: string; session_id: string; id: string; status: RunStatus }>(
        `SELECT runs.tenant_id::text AS tenant_id, runs.session_id, runs.id::text AS id, runs.status::text AS status
           FROM runs
          WHERE runs.status IN ('queued', 'running', 'paused')
          ORDER BY runs.created_at, runs.id`,
      ),
    );
    return rows.map((r) => ({
      tenantId: r.tenant_id,
      sessionId: r.session_id,
      runId: r.id,
      status: r.status,
    }));
  }

  /**
   * One statement in autocommit (Database.callSql): the hot path's canopy_* function calls, in the run lane (a
   * request waiting for its answer, a session create or a read, gets the next free connection before them).
   */
  private call<R>(scope: Scope, statement: Sql): Promise<R[]> {
    return this.db.callSql<R>(scope, statement.text, statement.values, 'run');
  }

  /**
   * Writes the session and its run, fenced on the run still being the session's active run: the session update
   * (which locks the row) decides, and the run is written only from its result, so a fenced call writes nothing.
   */
  private async fencedWrite(
    scope: Scope,
    sessionId: string,
    runId: string,
    setSession: Sql,
    setRun: Sql,
  ): Promise<FencedResult> {
    if (!isUuid(runId)) return 'fenced';
    return this.db.withTenantSql(scope, (tx) =>
      fencedUpdate(tx, scope, sessionId, runId, setSession, setRun),
    );
  }
}

/** The session by id in the scope's tenant, and only the scope's user's when it has one. */
function whereSession(scope: Scope, id: string): Sql {
  return sql`sessions.tenant_id = ${scope.tenantId}::uuid AND sessions.id = ${id}::text ${userFilter(scope)}`;
}

function userFilter(scope: Scope): Sql {
  // A session with no user (user_id NULL) never equals a user: invisible to user scopes, as it should be.
  return scope.userId === undefined ? empty : sql`AND sessions.user_id = ${scope.userId}::text`;
}

/** Runs of other users' sessions are as invisible as the sessions. */
function runUserFilter(scope: Scope): Sql {
  return scope.userId === undefined
    ? empty
    : sql`AND EXISTS (SELECT 1 FROM sessions
                       WHERE sessions.tenant_id = runs.tenant_id AND sessions.id = runs.session_id
                         AND sessions.user_id = ${scope.userId}::text)`;
}

/** The session's row, when the scope sees it. */
function sessionRows(tx: SqlTx, scope: Scope, id: string): Promise<SessionRow[]> {
  return query<SessionRow>(tx, sql`SELECT ${SESSION_COLUMNS} FROM sessions WHERE ${whereSession(scope, id)}`);
}

/** The session's queued prompts in the order they will run (none when the scope does not see the session). */
/** The fenced statement of fencedWrite, inside the caller's transaction. */
async function fencedUpdate(
  tx: SqlTx,
  scope: Scope,
  sessionId: string,
  runId: string,
  setSession: Sql,
  setRun: Sql,
): Promise<FencedResult> {
  const rows = await query(
    tx,
    sql`
    WITH fenced AS (
      UPDATE sessions SET ${setSession}, updated_at = now()
       WHERE ${whereSession(scope, sessionId)} AND sessions.active_run_id = ${runId}::uuid
      RETURNING sessions.tenant_id
    )
    UPDATE runs SET ${setRun}, updated_at = now()
      FROM fenced
     WHERE runs.tenant_id = fenced.tenant_id AND runs.id = ${runId}::uuid
    RETURNING 1 AS written`,
  );
  return rows.length > 0 ? 'ok' : 'fenced';
}

async function queuedRows(tx: SqlTx, scope: Scope, sessionId: string): Promise<QueuedPromptRecord[]> {
  const rows = await query<{ id: string; mode: QueueMode; input: unknown; actor: unknown; created_at: Date }>(
    tx,
    sql`
    SELECT q.id::text AS id, q.mode, q.input, q.actor, q.created_at
      FROM queued_prompts q JOIN sessions ON sessions.tenant_id = q.tenant_id AND sessions.id = q.session_id
     WHERE ${whereSession(scope, sessionId)}
     ORDER BY q.front DESC, q.seq`,
  );
  return rows.map((r) => ({
    id: r.id,
    mode: r.mode,
    input: jsonObject(r.input),
    actor: parseActor(r.actor),
    createdAt: r.created_at,
  }));
}

/** Locks the session row and answers its status (null: no such session for this scope). */
async function lockStatus(tx: SqlTx, scope: Scope, id: string): Promise<SessionStatus | null> {
  const [row] = await query<{ status: SessionStatus }>(
    tx,
    sql`SELECT sessions.status::text AS status FROM sessions WHERE ${whereSession(scope, id)} FOR UPDATE`,
  );
  return row?.status ?? null;
}

function setPosition(position: PositionRecord): Sql {
  return sql`path = ${position.path}::int[], cursors = ${json(position.cursors)}, head = ${position.head}::int`;
}

/**
 * canopy_commit's position: whole, or, when the caller knows the stored path and the new one keeps a prefix of it,
 * that prefix's length (checked by the stored path's length and the prefix's last id) and the ids after it.
 */
function positionArgument(position: PositionRecord, stored?: readonly NodeId[]): JsonObject {
  const { path, cursors, head } = position;
  let keep = 0;
  if (stored) while (keep < stored.length && keep < path.length && stored[keep] === path[keep]) keep++;
  if (keep === 0) return { path: [...path], cursors, head };
  return {
    path_keep: keep,
    path_length: stored!.length,
    path_at: stored![keep - 1]!,
    path_append: path.slice(keep),
    cursors,
    head,
  };
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

/** canopy_commit's p_finish: the run's usage, with the time to its first output when known. */
function finishArgument(finish: NonNullable<CommitInput['finish']>): Usage & { firstOutputMs?: number } {
  const usage = toUsage(finish.usage);
  return finish.firstOutputMs === undefined
    ? usage
    : { ...usage, firstOutputMs: Math.max(0, Math.round(finish.firstOutputMs)) };
}
