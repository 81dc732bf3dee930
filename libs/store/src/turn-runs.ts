// Which turns of a session ended their last run in an error (a turn's `status: "error"`). A failed run commits
// nothing, so the tree cannot tell: the runs can. The only turns a failed run leaves in the tree are the ones it
// regenerated (a branch run on a user node, rolled back when it failed); a turn whose latest regeneration failed
// carries that error until a later regeneration of it ends otherwise.

import type { NodeId, Scope } from '@canopy/core';
import type { SqlTx } from './database';
import { empty, query, sql } from './sql';

export interface FailedTurn {
  /** The user node that starts the turn. */
  nodeId: NodeId;
  error: { code: string; message: string };
}

export async function failedRegenerations(tx: SqlTx, scope: Scope, sessionId: string): Promise<FailedTurn[]> {
  const userFilter =
    scope.userId === undefined
      ? empty
      : sql`AND EXISTS (SELECT 1 FROM sessions
                         WHERE sessions.tenant_id = runs.tenant_id AND sessions.id = runs.session_id
                           AND sessions.user_id = ${scope.userId}::text)`;
  // The latest regeneration of each user node (runs_session_idx serves the session's runs, newest first).
  const rows = await query<{ node_id: number; status: string; error: unknown }>(
    tx,
    sql`
    SELECT latest.node_id, latest.status, latest.error FROM (
      SELECT DISTINCT ON ((runs.input ->> 'nodeId')::int)
             (runs.input ->> 'nodeId')::int AS node_id, runs.status::text AS status, runs.error
        FROM runs
       WHERE runs.tenant_id = ${scope.tenantId}::uuid AND runs.session_id = ${sessionId}::text
         AND runs.kind = 'branch' AND jsonb_typeof(runs.input -> 'nodeId') = 'number'
         AND NOT (runs.input ? 'content') ${userFilter}
       ORDER BY (runs.input ->> 'nodeId')::int, runs.created_at DESC, runs.id DESC
    ) AS latest
     WHERE latest.status = 'error'`,
  );
  return rows.map((r) => {
    const e = (r.error ?? {}) as { code?: unknown; message?: unknown };
    return {
      nodeId: r.node_id,
      error: {
        code: typeof e.code === 'string' ? e.code : 'internal',
        message: typeof e.message === 'string' ? e.message : 'the run failed',
      },
    };
  });
}
