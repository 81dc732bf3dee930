// Population-level operations on a tenant's sessions, beside the per-session SessionStore: search and count,
// fork (one statement), import of a whole tree, pages of whole sessions for export, and the selection and
// deletion of many sessions at once. Same rules as the store: every statement runs in one tenant transaction and
// a user scope reaches only its user's sessions.

import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CanopyException } from '@canopy/common';
import {
  sumUsage,
  systemScope,
  type ConversationSummary,
  type Scope,
  type SessionStatus,
  type TreeNode,
  type Usage,
} from '@canopy/core';
import { Database, type SqlTx } from './database';
import { filterConditions, type SessionFilter } from './session-filters';
import { countSessions, declareSearch, searchMatches, searchPage, type SearchPage } from './session-search';
import {
  NODE_JSON,
  SESSION_COLUMNS,
  SUMMARY_JSON,
  json,
  sessionOf,
  toNode,
  toSession,
  toSummary,
  toUsage,
  type NodeJson,
  type SessionRow,
  type SummaryJson,
} from './session-rows';
import type { JsonObject, PositionRecord, SessionRecord } from './session-store.port';
import { join, query, sql } from './sql';

const MAX_PAGE = 100;

export interface ForkInput {
  sessionId: string;
  /** The last node of the fork; default: the source's active path tip. */
  nodeId?: number | null;
  title?: string | null;
  /** The fork's metadata (default: the source's); `forkedFrom` is set on top. */
  metadata?: JsonObject;
  /** Default: the source's user. */
  userId?: string | null;
}

export type ForkResult =
  | { ok: true; session: SessionRecord; copied: number }
  | { ok: false; reason: 'not_found' | 'node_not_found' };

/** A session to store whole (an import): every field given, its tree exact. */
export interface ImportSessionInput extends ImportSessionHead {
  nodes: TreeNode[];
}

/** An imported session's fields and position, without its nodes (a staged import writes them in batches). */
export interface ImportSessionHead {
  id?: string;
  title: string | null;
  model: string;
  system: string | null;
  opts: JsonObject;
  tools: unknown[];
  metadata: JsonObject;
  userId: string | null;
  pinned: boolean;
  createdAt?: Date;
  updatedAt?: Date;
  position: PositionRecord;
  nextNodeId: number;
  /** Its context summaries, each against a node of the tree (stored with the session). */
  summaries?: ConversationSummary[];
}

export interface SessionWithTree {
  session: SessionRecord;
  nodes: TreeNode[];
  /** Its context summaries, oldest node first. */
  summaries: ConversationSummary[];
}

export interface BulkTarget {
  id: string;
  status: SessionStatus;
  activeRunId: string | null;
}

@Injectable()
export class SessionCatalogStore {
  constructor(private readonly db: Database) {}

  search(
    scope: Scope,
    input: { q: string; filter: SessionFilter; limit: number; cursor: string | null },
  ): Promise<SearchPage> {
    return this.db.withTenantSql(scope, async (tx) => {
      await declareSearch(tx, input.q);
      return searchPage(tx, scope, input.filter, clampLimit(input.limit), input.cursor);
    });
  }

  count(scope: Scope, input: { q?: string; filter: SessionFilter }): Promise<number> {
    return this.db.withTenantSql(scope, async (tx) => {
      if (input.q !== undefined) await declareSearch(tx, input.q);
      return countSessions(tx, scope, input.filter, input.q !== undefined);
    });
  }

  /**
   * A new session whose tree is the source's path from its root to the node (ids renumbered from 1, each node's
   * message and usage kept): ONE call of canopy_fork in autocommit (one round trip, its statements planned once per
   * connection), O(path length). Copy-on-write: the fork SHARES the path's nodes (its base)
   * instead of copying them; forking a fork shares what the source shares and copies
   * only the source's own nodes on the path (`copied`). A node on the source's active path (the default: its tip)
   * takes the stored path's prefix; any other node walks up the parent pointers. The context summaries stored
   * against the path's nodes are kept, against the fork's ids. Reads committed nodes only, so the source may be
   * busy; it is not touched.
   */
  async fork(scope: Scope, input: ForkInput): Promise<ForkResult> {
    const statement = sql`
      SELECT forked.outcome, forked.copied, ${sessionOf('forked')}
        FROM canopy_fork(${scope.tenantId}::uuid, ${scope.userId ?? null}::text, ${input.sessionId}::text,
                         ${input.nodeId ?? null}::int, ${randomBytes(16).toString('base64url')}::text,
                         ${input.title ?? null}::text, ${input.title !== undefined}::boolean,
                         ${input.metadata !== undefined ? json(input.metadata) : null}::jsonb,
                         ${input.userId ?? null}::text, ${this.db.txTimeoutMs}::int) AS forked`;
    const [row] = await this.db.callSql<
      { outcome: 'ok' | 'not_found' | 'node_not_found'; copied: number } & SessionRow
    >(scope, statement.text, statement.values);
    if (!row || row.outcome === 'not_found') return { ok: false, reason: 'not_found' };
    if (row.outcome === 'node_not_found') return { ok: false, reason: 'node_not_found' };
    return { ok: true, session: toSession(row), copied: row.copied };
  }

  /** Stores a session with its whole tree, in one transaction: all of it, or nothing (already_exists for a taken id). */
  importSession(scope: Scope, input: ImportSessionInput): Promise<SessionRecord> {
    const { nodes, ...head } = input;
    const usage = sumUsage(nodes.map((n) => n.usage));
    return this.importBatch(scope, head, usage, nodes.length ? JSON.stringify(nodes) : null, nodes.length);
  }

  /** importSession with the nodes as JSON (`count` of them, id order; null: none), as an import prepares them. */
  async importBatch(
    scope: Scope,
    head: ImportSessionHead,
    usage: Usage,
    nodesJson: string | null,
    count: number,
  ): Promise<SessionRecord> {
    const id = head.id ?? newSessionId();
    return this.db.withTenantSql(scope, async (tx) => {
      const row = await insertSession(tx, scope, id, head, usage, null);
      if (nodesJson !== null && count > 0) await insertNodes(tx, scope, id, nodesJson, count);
      return toSession(row);
    });
  }

  /**
   * The first step of an import written in batches: the session, STAGED (hidden from every transaction but those
   * given `token`, until publishImport: the staged_import policy), without nodes. already_exists for
   * a taken id (a staged one's included). `expiresAt`: past it, an untouched staged session is the sweep's.
   */
  async stageImport(
    scope: Scope,
    input: ImportSessionHead,
    usage: Usage,
    token: string,
    expiresAt: Date,
  ): Promise<string> {
    const id = input.id ?? newSessionId();
    await this.db.withImportSql(scope, token, (tx) =>
      insertSession(tx, scope, id, input, usage, { token, expiresAt }),
    );
    return id;
  }

  /**
   * One batch of a staged import's nodes (JSON of `count` nodes in id order, each one's parent in this batch or an
   * earlier one): ONE call of canopy_import_batch in autocommit (a round trip, where a transaction took four or five:
   * on the embedded database every open transaction holds all others up); the staged session's expiry moves to
   * `expiresAt` when one is given.
   */
  async addImportNodes(
    scope: Scope,
    id: string,
    token: string,
    batchJson: string,
    count: number,
    expiresAt: Date | null,
  ): Promise<void> {
    const [row] = await this.db.callSql<{ inserted: number }>(
      scope,
      `SELECT canopy_import_batch($1::uuid, $2::text, $3::text, $4::jsonb, $5::timestamptz, $6::int) AS inserted`,
      [scope.tenantId, id, token, batchJson, expiresAt, this.db.txTimeoutMs],
    );
    const inserted = row?.inserted ?? -1;
    if (inserted < 0) throw CanopyException.unavailable(`the staged import of session ${id} is gone`);
    // The formats check the tree before (parents known and older); a node no walk reached would be lost here.
    if (inserted !== count)
      throw new Error(`import of session ${id}: ${inserted} of ${count} nodes form a tree`);
  }

  /** Ends a staged import: the session becomes visible, as it is now; its times are the document's. */
  async publishImport(
    scope: Scope,
    id: string,
    token: string,
    times: { createdAt?: Date; updatedAt?: Date },
  ): Promise<SessionRecord> {
    const [row] = await this.db.withImportSql(scope, token, (tx) =>
      query<SessionRow>(
        tx,
        sql`
        UPDATE sessions
           SET import_token = NULL, import_expires_at = NULL,
               created_at = COALESCE(${times.createdAt ?? null}::timestamptz, now()),
               updated_at = COALESCE(${times.updatedAt ?? null}::timestamptz, now())
         WHERE tenant_id = ${scope.tenantId}::uuid AND id = ${id}::text AND import_token = ${token}::text
        RETURNING ${SESSION_COLUMNS}`,
      ),
    );
    if (!row) throw CanopyException.unavailable(`the staged import of session ${id} is gone`);
    return toSession(row);
  }

  /**
   * Deletes a staged import that failed, `batch` nodes per transaction (a short one each, like its writes), then
   * the session. Nobody saw it: no webhook, no audit event.
   */
  async discardImport(scope: Scope, id: string, token: string, batch: number): Promise<void> {
    for (;;) {
      const deleted = await this.db.withImportSql(scope, token, (tx) =>
        query(
          tx,
          sql`
          DELETE FROM nodes
           WHERE tenant_id = ${scope.tenantId}::uuid AND session_id = ${id}::text
             AND id IN (SELECT id FROM nodes
                         WHERE tenant_id = ${scope.tenantId}::uuid AND session_id = ${id}::text
                         ORDER BY id DESC LIMIT ${batch}::int)
          RETURNING 1`,
        ),
      );
      if (deleted.length < batch) break;
    }
    await this.db.withImportSql(scope, token, (tx) =>
      query(
        tx,
        sql`DELETE FROM sessions
             WHERE tenant_id = ${scope.tenantId}::uuid AND id = ${id}::text AND import_token = ${token}::text`,
      ),
    );
  }

  /** Staged imports nobody touched since before `now` (their process died): the sweep discards them. */
  async abandonedImports(
    now: Date,
    limit: number,
  ): Promise<Array<{ scope: Scope; id: string; token: string }>> {
    const rows = await this.db.withAdminSql('import sweep: abandoned staged imports', (tx) =>
      query<{ tenant_id: string; id: string; import_token: string }>(
        tx,
        sql`SELECT tenant_id::text AS tenant_id, id, import_token FROM sessions
             WHERE import_token IS NOT NULL AND import_expires_at < ${now}::timestamptz
             ORDER BY import_expires_at LIMIT ${limit}::int`,
      ),
    );
    return rows.map((r) => ({ scope: systemScope(r.tenant_id), id: r.id, token: r.import_token }));
  }

  /**
   * A page of whole sessions (fields and every node) for export, oldest created first: creation times never
   * change, so an export resumed from a cursor neither skips nor repeats a session that was updated meanwhile.
   */
  async exportPage(
    scope: Scope,
    filter: SessionFilter,
    limit: number,
    cursor: string | null,
  ): Promise<{ data: SessionWithTree[]; nextCursor: string | null }> {
    const conditions = filterConditions(scope, filter);
    if (cursor) {
      const after = decodeExportCursor(cursor);
      conditions.push(
        sql`(sessions.created_at, sessions.id) > (${after.createdAt}::timestamptz, ${after.id}::text)`,
      );
    }
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query<SessionRow & { nodes: NodeJson[]; summaries: SummaryJson[] }>(
        tx,
        sql`
        SELECT ${SESSION_COLUMNS},
               COALESCE((SELECT json_agg(${NODE_JSON} ORDER BY nodes.id)
                           FROM canopy_session_nodes(sessions.tenant_id, sessions.id) AS nodes), '[]') AS nodes,
               COALESCE((SELECT json_agg(${SUMMARY_JSON} ORDER BY c.through_node_id)
                           FROM context_summaries AS c
                          WHERE c.tenant_id = sessions.tenant_id AND c.session_id = sessions.id), '[]') AS summaries
          FROM sessions
         WHERE ${join(conditions, ' AND ')}
         ORDER BY sessions.created_at, sessions.id
         LIMIT ${clampLimit(limit) + 1}::int`,
      ),
    );
    const data = rows.slice(0, clampLimit(limit)).map((r) => ({
      session: toSession(r),
      nodes: r.nodes.map(toNode),
      summaries: r.summaries.map(toSummary),
    }));
    const last = data[data.length - 1];
    return { data, nextCursor: rows.length > data.length && last ? exportCursorOf(last.session) : null };
  }

  /** Up to `limit` sessions matching the filter (newest updatedAt first), for a bulk operation. */
  async select(scope: Scope, filter: SessionFilter, limit: number, q?: string): Promise<BulkTarget[]> {
    const conditions = filterConditions(scope, filter);
    return this.db.withTenantSql(scope, async (tx) => {
      if (q !== undefined) {
        await declareSearch(tx, q);
        conditions.push(searchMatches());
      }
      const rows = await query<{ id: string; status: SessionStatus; active_run_id: string | null }>(
        tx,
        sql`
        SELECT sessions.id, sessions.status::text AS status, sessions.active_run_id::text AS active_run_id
          FROM sessions
         WHERE ${join(conditions, ' AND ')}
         ORDER BY sessions.updated_at DESC, sessions.id DESC
         LIMIT ${limit}::int`,
      );
      return rows.map((r) => ({ id: r.id, status: r.status, activeRunId: r.active_run_id }));
    });
  }

  /** Deletes these sessions (with their nodes and runs) in one statement, unless busy; answers the deleted ids. */
  async deleteIdle(scope: Scope, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const conditions = [...filterConditions(scope, { ids }), sql`sessions.status <> 'busy'`];
    const rows = await this.db.withTenantSql(scope, (tx) =>
      query<{ id: string }>(
        tx,
        sql`DELETE FROM sessions WHERE ${join(conditions, ' AND ')} RETURNING sessions.id`,
      ),
    );
    return rows.map((r) => r.id);
  }
}

function clampLimit(limit: number): number {
  return Math.min(MAX_PAGE, Math.max(1, Math.trunc(limit) || 1));
}

/** Where an export stands after this session: resume with it as `cursor` (public: the SDK computes it too). */
export function exportCursorOf(session: { createdAt: Date | string; id: string }): string {
  const createdAt =
    typeof session.createdAt === 'string' ? session.createdAt : session.createdAt.toISOString();
  return Buffer.from(JSON.stringify({ createdAt, id: session.id })).toString('base64url');
}

function decodeExportCursor(cursor: string): { createdAt: string; id: string } {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      createdAt?: unknown;
      id?: unknown;
    };
    const at = new Date(typeof parsed.createdAt === 'string' ? parsed.createdAt : '');
    if (
      !Number.isNaN(at.getTime()) &&
      typeof parsed.id === 'string' &&
      /^[A-Za-z0-9_-]{1,128}$/.test(parsed.id)
    ) {
      return { createdAt: at.toISOString(), id: parsed.id };
    }
  } catch {
    // fall through: not base64url JSON
  }
  throw CanopyException.badRequest('invalid cursor', { field: 'cursor' });
}

function newSessionId(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * The session row of an import, with its context summaries; `staged`: hidden until published (stageImport).
 * already_exists for a taken id.
 */
async function insertSession(
  tx: SqlTx,
  scope: Scope,
  id: string,
  input: ImportSessionHead,
  usage: Usage,
  staged: { token: string; expiresAt: Date } | null,
): Promise<SessionRow> {
  const userId = scope.userId ?? input.userId;
  const [row] = await query<SessionRow>(
    tx,
    sql`
    INSERT INTO sessions (tenant_id, id, user_id, title, model, system, opts, tools, metadata, pinned, path,
                          cursors, head, next_node_id, usage, created_at, updated_at, import_token, import_expires_at)
    VALUES (${scope.tenantId}::uuid, ${id}::text, ${userId}::text, ${input.title}::text, ${input.model}::text,
            ${input.system}::text, ${json(input.opts)}, ${json(input.tools)}, ${json(input.metadata)},
            ${input.pinned}::boolean, ${input.position.path}::int[], ${json(input.position.cursors)},
            ${input.position.head}::int, ${input.nextNodeId}::int, ${json(toUsage(usage))},
            COALESCE(${input.createdAt ?? null}::timestamptz, now()),
            COALESCE(${input.updatedAt ?? null}::timestamptz, now()),
            ${staged?.token ?? null}::text, ${staged?.expiresAt ?? null}::timestamptz)
    ON CONFLICT (tenant_id, id) DO NOTHING
    RETURNING ${SESSION_COLUMNS}`,
  );
  if (!row) throw new CanopyException('already_exists', `session ${id} already exists`, { id, field: 'id' });
  if (input.summaries?.length) {
    await query(
      tx,
      sql`
      INSERT INTO context_summaries (tenant_id, session_id, through_node_id, text, tokens, model, usage)
      SELECT ${scope.tenantId}::uuid, ${id}::text, c."throughNodeId", c.text, c.tokens, c.model, c.usage
        FROM jsonb_to_recordset(${json(input.summaries)}) AS c("throughNodeId" INTEGER, text TEXT, tokens INTEGER,
                                                                 model TEXT, usage JSONB)`,
    );
  }
  return row;
}

/**
 * Inserts `count` nodes (JSON, id order) of a session, with their path usages (canopy_insert_nodes, which a staged
 * import's batches call too). Parents inserted by the same statement satisfy the parent check, made at its end.
 */
async function insertNodes(
  tx: SqlTx,
  scope: Scope,
  id: string,
  batchJson: string,
  count: number,
): Promise<void> {
  const [row] = await query<{ inserted: number }>(
    tx,
    sql`SELECT canopy_insert_nodes(${scope.tenantId}::uuid, ${id}::text, ${batchJson}::jsonb) AS inserted`,
  );
  // The formats check the tree before (parents known and older); a node no walk reached would be lost here.
  if (row?.inserted !== count)
    throw new Error(`import of session ${id}: ${row?.inserted ?? 0} of ${count} nodes form a tree`);
}
