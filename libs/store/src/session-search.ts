// Full-text search over a tenant's message text, and counting, with the shared session filters. The words are
// found by node_search's GIN index (tenant, words); the query travels as the transaction setting canopy.search,
// which node_search's SELECT policy applies (docs/conversations.md says why a policy:
// under forced row-level security only policy conditions may use the index). Sessions are ranked by their best
// matching message (ts_rank), then newest first; each hit carries its best matching node ids and a snippet of the
// best one with the matched words marked. A fork matches its shared messages too (matchRows).

import { CanopyException } from '@canopy/common';
import type { Scope } from '@canopy/core';
import type { SqlTx } from './database';
import { filterConditions, type SessionFilter } from './session-filters';
import { SESSION_COLUMNS, toSession, type SessionRow } from './session-rows';
import type { SessionRecord } from './session-store.port';
import { join, query, sql, type Sql } from './sql';

/** Marks around matched words in a snippet (private-use characters, removed from the text first). */
const MARK_START = '\uE000';
const MARK_END = '\uE001';
const HEADLINE_OPTIONS = `StartSel="${MARK_START}", StopSel="${MARK_END}", MaxWords=24, MinWords=8, MaxFragments=2, FragmentDelimiter=" … "`;
/** Matching node ids answered per session, best first. */
const MAX_NODE_IDS = 20;

export interface SearchHit {
  session: SessionRecord;
  /** The best matching message's rank (ts_rank); higher is better. */
  rank: number;
  /** Messages that match, best first (at most 20). */
  nodeIds: number[];
  /** Matching messages in all. */
  matches: number;
  /** The best matching message, cut around the matches; `highlights` are [start, end) offsets in `text`. */
  snippet: { nodeId: number; text: string; highlights: Array<[number, number]> };
}

export interface SearchPage {
  data: SearchHit[];
  nextCursor: string | null;
}

/**
 * Declares the transaction's search (websearch_to_tsquery syntax: words, "quoted phrases", or, -word). Refuses a
 * query with no word to look for (only stop characters, or only exclusions): it could not use the index.
 */
export async function declareSearch(tx: SqlTx, q: string): Promise<void> {
  const [row] = await query<{ size: number; tree: string }>(
    tx,
    sql`SELECT numnode(parsed) AS size, querytree(parsed) AS tree, set_config('canopy.search', parsed::text, true)
          FROM websearch_to_tsquery('simple', ${q}::text) AS parsed`,
  );
  if (!row || row.size === 0 || row.tree === 'T') {
    throw CanopyException.badRequest(
      'the search has no word to look for (only excluded words or punctuation)',
      {
        field: 'q',
        issues: [{ path: 'q', message: 'no word to look for' }],
      },
    );
  }
}

/**
 * The statement of a search page: the matches joined to the sessions the filter keeps, then grouped per session.
 * Written as one join so the planner can start from either side: the GIN index for the words when the filter keeps
 * much, the sessions (by user, by metadata) and their messages by primary key when it keeps little.
 */
export function searchStatement(
  scope: Scope,
  filter: SessionFilter,
  limit: number,
  after: { rank: number; updatedAt: string; id: string } | null,
): Sql {
  const keyset = after
    ? sql`WHERE (ranked.rank, sessions.updated_at, sessions.id)
                < (${after.rank}::real, ${after.updatedAt}::timestamptz, ${after.id}::text)`
    : sql``;
  return sql`
    WITH ranked AS (
      SELECT hit.session_id, max(hit.rank) AS rank, count(*) AS matches,
             (array_agg(hit.node_id ORDER BY hit.rank DESC, hit.node_id))[1:${MAX_NODE_IDS}::int] AS node_ids
        FROM (${matchRows(scope, filter)}) AS hit
       GROUP BY hit.session_id
    ), page AS (
      SELECT ${SESSION_COLUMNS}, ranked.rank, ranked.node_ids, ranked.matches
        FROM ranked
        JOIN sessions ON sessions.tenant_id = ${scope.tenantId}::uuid AND sessions.id = ranked.session_id
       ${keyset}
       ORDER BY ranked.rank DESC, sessions.updated_at DESC, sessions.id DESC
       LIMIT ${limit + 1}::int
    )
    SELECT page.*, headline.snippet
      FROM page
      LEFT JOIN LATERAL (
        SELECT ts_headline('simple', translate(canopy_message_text(nodes.message), ${MARK_START + MARK_END}::text, '  '),
                           canopy_search_query(), ${HEADLINE_OPTIONS}::text) AS snippet
          FROM canopy_session_nodes(${scope.tenantId}::uuid, page.id, page.node_ids[1:1]) AS nodes
      ) AS headline ON true
     ORDER BY page.rank DESC, page.updated_at DESC, page.id DESC`;
}

/**
 * The matching messages of the sessions the filter keeps, as rows (session_id, node_id, rank): each session's own
 * node_search rows, and a fork's shared ones (copy-on-write forks): a match on
 * node m of a base session is a match of each of its forks whose base holds m, under the fork's id for it (its
 * position in base_node_ids). The filter applies to the session that answers, the fork's own row for a shared
 * match; a base's forks are found by sessions_base_idx.
 */
function matchRows(scope: Scope, filter: SessionFilter): Sql {
  const where = join(filterConditions(scope, filter), ' AND ');
  return sql`
    SELECT sessions.id AS session_id, node_search.node_id, ts_rank(node_search.search, canopy_search_query()) AS rank
      FROM sessions
      JOIN node_search ON node_search.tenant_id = sessions.tenant_id
                      AND node_search.session_id = sessions.id
                      AND node_search.search @@ canopy_search_query()
     WHERE ${where}
    UNION ALL
    SELECT sessions.id, array_position(sessions.base_node_ids, node_search.node_id),
           ts_rank(node_search.search, canopy_search_query())
      FROM sessions
      JOIN node_search ON node_search.tenant_id = sessions.tenant_id
                      AND node_search.session_id = sessions.base_session_id
                      AND node_search.node_id = ANY (sessions.base_node_ids)
                      AND node_search.search @@ canopy_search_query()
     WHERE ${where} AND sessions.base_session_id IS NOT NULL`;
}

/**
 * A condition on `sessions`: the session has a message matching the transaction's search, its own or (a fork) a
 * shared one.
 */
export function searchMatches(): Sql {
  return sql`(EXISTS (SELECT 1 FROM node_search
                       WHERE node_search.tenant_id = sessions.tenant_id AND node_search.session_id = sessions.id
                         AND node_search.search @@ canopy_search_query())
              OR EXISTS (SELECT 1 FROM node_search
                          WHERE node_search.tenant_id = sessions.tenant_id
                            AND node_search.session_id = sessions.base_session_id
                            AND node_search.node_id = ANY (sessions.base_node_ids)
                            AND node_search.search @@ canopy_search_query()))`;
}

/** The matching sessions of the page after `cursor`, best first. Call declareSearch first in the same transaction. */
export async function searchPage(
  tx: SqlTx,
  scope: Scope,
  filter: SessionFilter,
  limit: number,
  cursor: string | null,
): Promise<SearchPage> {
  const after = cursor ? decodeSearchCursor(cursor) : null;
  const rows = await query<
    SessionRow & { rank: number; node_ids: number[]; matches: string; snippet: string | null }
  >(tx, searchStatement(scope, filter, limit, after));
  const data = rows.slice(0, limit).map((r): SearchHit => ({
    session: toSession(r),
    rank: r.rank,
    nodeIds: r.node_ids,
    matches: Number(r.matches),
    snippet: { nodeId: r.node_ids[0] ?? 0, ...marked(r.snippet ?? '') },
  }));
  const last = data[data.length - 1];
  return {
    data,
    nextCursor:
      rows.length > limit && last
        ? encodeSearchCursor({
            rank: last.rank,
            updatedAt: last.session.updatedAt.toISOString(),
            id: last.session.id,
          })
        : null,
  };
}

/** Sessions matching the filter (and the search, when one was declared in this transaction). */
export async function countSessions(
  tx: SqlTx,
  scope: Scope,
  filter: SessionFilter,
  searching: boolean,
): Promise<number> {
  const conditions = filterConditions(scope, filter);
  const [row] = searching
    ? await query<{ count: string }>(
        tx,
        sql`SELECT count(DISTINCT hit.session_id) AS count FROM (${matchRows(scope, filter)}) AS hit`,
      )
    : await query<{ count: string }>(
        tx,
        sql`SELECT count(*) AS count FROM sessions WHERE ${join(conditions, ' AND ')}`,
      );
  return Number(row?.count ?? 0);
}

/** A headline with marks -> its text and the marked ranges. */
export function marked(headline: string): { text: string; highlights: Array<[number, number]> } {
  let text = '';
  const highlights: Array<[number, number]> = [];
  let start = -1;
  for (const ch of headline) {
    if (ch === MARK_START) start = text.length;
    else if (ch === MARK_END) {
      if (start >= 0 && text.length > start) highlights.push([start, text.length]);
      start = -1;
    } else text += ch;
  }
  return { text, highlights };
}

interface SearchCursor {
  rank: number;
  updatedAt: string;
  id: string;
}

function encodeSearchCursor(c: SearchCursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function decodeSearchCursor(cursor: string): SearchCursor {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<SearchCursor>;
    const at = new Date(typeof parsed.updatedAt === 'string' ? parsed.updatedAt : '');
    if (
      typeof parsed.rank === 'number' &&
      Number.isFinite(parsed.rank) &&
      !Number.isNaN(at.getTime()) &&
      typeof parsed.id === 'string' &&
      /^[A-Za-z0-9_-]{1,128}$/.test(parsed.id)
    ) {
      return { rank: parsed.rank, updatedAt: at.toISOString(), id: parsed.id };
    }
  } catch {
    // fall through: not base64url JSON
  }
  throw CanopyException.badRequest('invalid cursor', { field: 'cursor' });
}
