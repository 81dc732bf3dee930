// Feedback at rest: one rating per (session, reply node, rater), put again to change it, with the turn it rates
// kept beside it. The first rating of a reply by a rater announces `feedback.created` (webhook) in its
// transaction. Listings and the export go newest first by (created_at, id), a keyset a cursor resumes.

import { CanopyException } from '@canopy/common';
import type { FeedbackRating, FeedbackView, Scope, Usage } from '@canopy/core';
import { Database, type SqlTx } from '@canopy/store';
import { decodeCursor, encodeCursor } from './listing-cursor';

export interface FeedbackInput {
  sessionId: string;
  nodeId: number;
  userId: string | null;
  rating: FeedbackRating;
  comment: string | null;
  tags: string[];
  model: string;
  promptNodeId: number;
  prompt: string;
  reply: string;
  usage: Usage;
}

export interface FeedbackFilter {
  from?: string;
  to?: string;
  model?: string;
  rating?: FeedbackRating;
  userId?: string;
  sessionId?: string;
}

interface FeedbackRow {
  id: string;
  session_id: string;
  node_id: number;
  user_id: string | null;
  rating: FeedbackRating;
  comment: string | null;
  tags: string[];
  model: string;
  prompt_node_id: number;
  prompt: string;
  reply: string;
  usage: Usage;
  created_at: Date;
  updated_at: Date;
  inserted?: boolean;
}

const COLUMNS = `id, session_id, node_id, user_id, rating, comment, tags, model, prompt_node_id, prompt, reply, usage,
                 created_at, updated_at`;

export class FeedbackRepository {
  constructor(private readonly db: Database) {}

  /** Creates or replaces the rater's rating of the node. */
  async put(scope: Scope, input: FeedbackInput): Promise<{ feedback: FeedbackView; created: boolean }> {
    return this.db.withTenantSql(scope, async (tx) => {
      const [row] = await tx.query<FeedbackRow>(
        `INSERT INTO feedback AS f (tenant_id, session_id, node_id, user_id, rating, comment, tags, model,
                                    prompt_node_id, prompt, reply, usage)
         VALUES ($1::uuid, $2, $3, $4, $5, $6, $7::text[], $8, $9, $10, $11, $12::jsonb)
         ON CONFLICT (tenant_id, session_id, node_id, (COALESCE(user_id, ''::text))) DO UPDATE
            SET rating = EXCLUDED.rating, comment = EXCLUDED.comment, tags = EXCLUDED.tags, updated_at = now()
         RETURNING ${COLUMNS}, (xmax = 0) AS inserted`,
        [
          scope.tenantId,
          input.sessionId,
          input.nodeId,
          input.userId,
          input.rating,
          input.comment,
          input.tags,
          input.model,
          input.promptNodeId,
          input.prompt,
          input.reply,
          JSON.stringify(input.usage),
        ],
      );
      const feedback = toView(row!);
      if (row!.inserted) await announce(tx, scope.tenantId, feedback);
      return { feedback, created: row!.inserted === true };
    });
  }

  /** Removes the rater's rating of the node; 404 when there is none. */
  async delete(scope: Scope, sessionId: string, nodeId: number, userId: string | null): Promise<void> {
    const rows = await this.db.withTenantSql(scope, (tx) =>
      tx.query(
        `DELETE FROM feedback
          WHERE tenant_id = $1::uuid AND session_id = $2 AND node_id = $3 AND COALESCE(user_id, '') = $4
          RETURNING id`,
        [scope.tenantId, sessionId, nodeId, userId ?? ''],
      ),
    );
    if (rows.length === 0) throw CanopyException.notFound('feedback');
  }

  /** A page of ratings matching the filter, newest first. */
  async list(
    scope: Scope,
    filter: FeedbackFilter,
    limit: number,
    cursor: string | null,
  ): Promise<{ data: FeedbackView[]; nextCursor: string | null }> {
    const params: unknown[] = [scope.tenantId];
    const where = ['tenant_id = $1::uuid'];
    const add = (condition: (n: number) => string, value: unknown) => {
      params.push(value);
      where.push(condition(params.length));
    };
    if (filter.from !== undefined) add((n) => `created_at >= $${n}::timestamptz`, filter.from);
    if (filter.to !== undefined) add((n) => `created_at < $${n}::timestamptz`, filter.to);
    if (filter.model !== undefined) add((n) => `model = $${n}`, filter.model);
    if (filter.rating !== undefined) add((n) => `rating = $${n}`, filter.rating);
    if (filter.userId !== undefined) add((n) => `user_id = $${n}`, filter.userId);
    if (filter.sessionId !== undefined) add((n) => `session_id = $${n}`, filter.sessionId);
    if (cursor !== null) {
      const after = decodeCursor(cursor);
      params.push(after.createdAt, after.id);
      where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    params.push(limit + 1);
    const rows = await this.db.withTenantSql(scope, (tx) =>
      tx.query<FeedbackRow>(
        `SELECT ${COLUMNS} FROM feedback WHERE ${where.join(' AND ')}
          ORDER BY created_at DESC, id DESC LIMIT $${params.length}::int`,
        params,
      ),
    );
    const page = rows.slice(0, limit).map(toView);
    const last = page[page.length - 1];
    return { data: page, nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
  }
}

async function announce(tx: SqlTx, tenantId: string, f: FeedbackView): Promise<void> {
  await tx.query(`SELECT canopy_webhook_enqueue($1::uuid, 'feedback.created', $2::jsonb)`, [
    tenantId,
    JSON.stringify({
      feedbackId: f.id,
      sessionId: f.sessionId,
      nodeId: f.nodeId,
      userId: f.userId,
      rating: f.rating,
      comment: f.comment,
      tags: f.tags,
      model: f.model,
    }),
  ]);
}

function toView(row: FeedbackRow): FeedbackView {
  return {
    id: row.id,
    sessionId: row.session_id,
    nodeId: row.node_id,
    userId: row.user_id,
    rating: row.rating,
    comment: row.comment,
    tags: row.tags,
    model: row.model,
    promptNodeId: row.prompt_node_id,
    prompt: row.prompt,
    reply: row.reply,
    usage: row.usage,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
