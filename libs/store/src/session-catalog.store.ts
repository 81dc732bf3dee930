// Population-level operations on a tenant's sessions, beside the per-session SessionStore: search and count,
// fork (one statement), import of a whole tree, pages of whole sessions for export, and the selection and
// deletion of many sessions at once. Same rules as the store: every statement runs in one tenant transaction and
// a user scope reaches only its user's sessions.

import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CanopyException } from '@canopy/common';
import { sumUsage, type Scope, type SessionStatus, type TreeNode } from '@canopy/core';
import { Database } from './database';
import { filterConditions, type SessionFilter } from './session-filters';
import { countSessions, declareSearch, searchPage, type SearchPage } from './session-search';
import {
  NODE_JSON,
  SESSION_COLUMNS,
  json,
  toNode,
  toSession,
  toUsage,
  type NodeJson,
  type SessionRow,
} from './session-rows';
import type { JsonObject, PositionRecord, SessionRecord } from './session-store.port';
import { join, query, raw, sql } from './sql';

const MAX_PAGE = 100;

const USAGE_PARTS = [
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'inputCost',
  'outputCost',
  'cacheReadCost',
  'cacheWriteCost',
] as const;

/**
 * The usage of `numbered`'s nodes summed field by field in node order, as sumUsage does (a missing field counts 0,
 * a missing total is the sum of its parts). canopy_usage_number is a plain expression the planner inlines, so this
 * costs a few microseconds a node where folding canopy_usage_add over rows cost a millisecond.
 */
const USAGE_SUM = (() => {
  const field = (f: string) => `COALESCE(canopy_usage_number(numbered.usage, '${f}'), 0)`;
  const total = (f: string, parts: readonly string[]) =>
    `COALESCE(canopy_usage_number(numbered.usage, '${f}'), ${parts.map(field).join(' + ')})`;
  const sum = (expr: string) => `COALESCE(sum(${expr} ORDER BY numbered.new_id), 0)`;
  const entries = [
    ...USAGE_PARTS.map((f) => `'${f}', ${sum(field(f))}`),
    `'totalTokens', ${sum(total('totalTokens', USAGE_PARTS.slice(0, 4)))}`,
    `'totalCost', ${sum(total('totalCost', USAGE_PARTS.slice(4)))}`,
  ];
  return raw(`jsonb_build_object(${entries.join(', ')})`);
})();

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
export interface ImportSessionInput {
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
  nodes: TreeNode[];
  position: PositionRecord;
  nextNodeId: number;
}

export interface SessionWithTree {
  session: SessionRecord;
  nodes: TreeNode[];
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
   * message and usage kept), in ONE statement: the path (O(path length) primary-key lookups), the session and its
   * nodes. A node on the source's active path (the default: its tip) takes the stored path's prefix, each node
   * read by id; any other node walks up the parent pointers. Reads committed nodes only, so the source may be
   * busy; it is not touched.
   */
  async fork(scope: Scope, input: ForkInput): Promise<ForkResult> {
    const id = randomBytes(16).toString('base64url');
    const source = sql`sessions.tenant_id = ${scope.tenantId}::uuid AND sessions.id = ${input.sessionId}::text
                       ${scope.userId !== undefined ? sql`AND sessions.user_id = ${scope.userId}::text` : sql``}`;
    const nodesOf = sql`nodes.tenant_id = ${scope.tenantId}::uuid AND nodes.session_id = ${input.sessionId}::text`;
    const title = input.title !== undefined ? sql`${input.title}::text` : sql`source.title`;
    const metadata = input.metadata !== undefined ? json(input.metadata) : sql`source.metadata`;
    const userId =
      scope.userId !== undefined
        ? sql`${scope.userId}::text`
        : input.userId !== undefined
          ? sql`${input.userId}::text`
          : sql`source.user_id`;
    const [row] = await this.db.withTenantSql(scope, (tx) =>
      query<Partial<SessionRow> & { found_source: boolean; found_node: boolean; copied: string }>(
        tx,
        sql`
        WITH RECURSIVE source AS (
          SELECT sessions.* FROM sessions WHERE ${source}
        ), tip AS (
          SELECT target.id, array_position(source.path, target.id) AS position
            FROM source CROSS JOIN LATERAL (SELECT COALESCE(${input.nodeId ?? null}::int, source.head) AS id) AS target
        ), on_path AS (
          -- On the active path: its prefix, each node one primary-key lookup (LIMIT 1 keeps it a lookup).
          SELECT found.*, step.new_id
            FROM source, tip, unnest(source.path[1:tip.position]) WITH ORDINALITY AS step(id, new_id)
           CROSS JOIN LATERAL (
              SELECT nodes.id, nodes.parent_id, nodes.role, nodes.message, nodes.usage
                FROM nodes WHERE ${nodesOf} AND nodes.id = step.id LIMIT 1) AS found
           WHERE tip.position IS NOT NULL
        ), up AS (
          -- Elsewhere: the walk up, each step one primary-key lookup.
          SELECT found.*, 1 AS depth
            FROM tip CROSS JOIN LATERAL (
              SELECT nodes.id, nodes.parent_id, nodes.role, nodes.message, nodes.usage
                FROM nodes WHERE ${nodesOf} AND nodes.id = tip.id LIMIT 1) AS found
           WHERE tip.position IS NULL
          UNION ALL
          SELECT found.*, up.depth + 1
            FROM up CROSS JOIN LATERAL (
              SELECT nodes.id, nodes.parent_id, nodes.role, nodes.message, nodes.usage
                FROM nodes WHERE ${nodesOf} AND nodes.id = up.parent_id LIMIT 1) AS found
        ), numbered AS (
          SELECT id, parent_id, role, message, usage, new_id FROM on_path
          UNION ALL
          SELECT id, parent_id, role, message, usage, (SELECT max(depth) FROM up) - depth + 1 FROM up
        ), created AS (
          INSERT INTO sessions (tenant_id, id, user_id, title, model, system, opts, tools, metadata,
                                idle_shutdown_after_ms, path, cursors, head, next_node_id, usage)
          SELECT source.tenant_id, ${id}::text, ${userId}, ${title}, source.model, source.system, source.opts,
                 source.tools,
                 ${metadata} || jsonb_build_object('forkedFrom',
                                  jsonb_build_object('sessionId', source.id, 'nodeId', tip.id)),
                 source.idle_shutdown_after_ms,
                 COALESCE((SELECT array_agg(new_id ORDER BY new_id) FROM numbered), '{}'),
                 COALESCE((SELECT jsonb_object_agg((new_id - 1)::text, new_id) FROM numbered WHERE new_id > 1), '{}'),
                 (SELECT max(new_id) FROM numbered),
                 COALESCE((SELECT max(new_id) FROM numbered), 0) + 1,
                 (SELECT ${USAGE_SUM} FROM numbered)
            FROM source, tip
           WHERE tip.id IS NULL OR EXISTS (SELECT 1 FROM numbered)
          RETURNING ${SESSION_COLUMNS}
        ), copied AS (
          INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage)
          SELECT ${scope.tenantId}::uuid, created.id, numbered.new_id, NULLIF(numbered.new_id - 1, 0),
                 numbered.role, numbered.message, numbered.usage
            FROM numbered, created
          RETURNING 1
        )
        SELECT created.*, EXISTS (SELECT 1 FROM source) AS found_source,
               EXISTS (SELECT 1 FROM numbered) AS found_node,
               (SELECT count(*) FROM copied) AS copied
          FROM (SELECT 1) AS one LEFT JOIN created ON true`,
      ),
    );
    if (!row?.found_source) return { ok: false, reason: 'not_found' };
    if (row.id == null) return { ok: false, reason: 'node_not_found' };
    return { ok: true, session: toSession(row as SessionRow), copied: Number(row.copied) };
  }

  /** Stores a session with its whole tree, in one transaction: all of it, or nothing (already_exists for a taken id). */
  async importSession(scope: Scope, input: ImportSessionInput): Promise<SessionRecord> {
    const id = input.id ?? randomBytes(16).toString('base64url');
    const userId = scope.userId ?? input.userId;
    const usage = sumUsage(input.nodes.map((n) => n.usage));
    return this.db.withTenantSql(scope, async (tx) => {
      const [row] = await query<SessionRow>(
        tx,
        sql`
        INSERT INTO sessions (tenant_id, id, user_id, title, model, system, opts, tools, metadata, pinned, path,
                              cursors, head, next_node_id, usage, created_at, updated_at)
        VALUES (${scope.tenantId}::uuid, ${id}::text, ${userId}::text, ${input.title}::text, ${input.model}::text,
                ${input.system}::text, ${json(input.opts)}, ${json(input.tools)}, ${json(input.metadata)},
                ${input.pinned}::boolean, ${input.position.path}::int[], ${json(input.position.cursors)},
                ${input.position.head}::int, ${input.nextNodeId}::int, ${json(toUsage(usage))},
                COALESCE(${input.createdAt ?? null}::timestamptz, now()),
                COALESCE(${input.updatedAt ?? null}::timestamptz, now()))
        ON CONFLICT (tenant_id, id) DO NOTHING
        RETURNING ${SESSION_COLUMNS}`,
      );
      if (!row)
        throw new CanopyException('already_exists', `session ${id} already exists`, { id, field: 'id' });
      if (input.nodes.length) {
        // Parents inserted by the same statement satisfy the foreign key, checked at its end.
        await query(
          tx,
          sql`
          INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage)
          SELECT ${scope.tenantId}::uuid, ${id}::text, n.id, n."parentId", (n.message ->> 'role')::message_role,
                 n.message, n.usage
            FROM jsonb_to_recordset(${json(input.nodes)}) AS n(id INTEGER, "parentId" INTEGER, message JSONB, usage JSONB)`,
        );
      }
      return toSession(row);
    });
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
      query<SessionRow & { nodes: NodeJson[] }>(
        tx,
        sql`
        SELECT ${SESSION_COLUMNS},
               COALESCE((SELECT json_agg(${NODE_JSON} ORDER BY nodes.id) FROM nodes
                          WHERE nodes.tenant_id = sessions.tenant_id AND nodes.session_id = sessions.id), '[]') AS nodes
          FROM sessions
         WHERE ${join(conditions, ' AND ')}
         ORDER BY sessions.created_at, sessions.id
         LIMIT ${clampLimit(limit) + 1}::int`,
      ),
    );
    const data = rows
      .slice(0, clampLimit(limit))
      .map((r) => ({ session: toSession(r), nodes: r.nodes.map(toNode) }));
    const last = data[data.length - 1];
    return { data, nextCursor: rows.length > data.length && last ? exportCursorOf(last.session) : null };
  }

  /** Up to `limit` sessions matching the filter (newest updatedAt first), for a bulk operation. */
  async select(scope: Scope, filter: SessionFilter, limit: number, q?: string): Promise<BulkTarget[]> {
    const conditions = filterConditions(scope, filter);
    return this.db.withTenantSql(scope, async (tx) => {
      if (q !== undefined) {
        await declareSearch(tx, q);
        conditions.push(
          sql`EXISTS (SELECT 1 FROM node_search WHERE node_search.tenant_id = sessions.tenant_id
                        AND node_search.session_id = sessions.id AND node_search.search @@ canopy_search_query())`,
        );
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
