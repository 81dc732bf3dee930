// Share links at rest: a pointer to the path root -> node of a session (the ids as they were when it was made) and
// the sha256 of its token. Creating one announces `session.shared` (webhook) and is audited, in its transaction; a
// revocation is audited the same way. A link is looked up by its token's hash before its tenant is known (the one
// read across tenants here), then read as its tenant. Nothing is cached: a revoked or expired link answers nothing
// on every process of the deployment from the moment its row is gone.

import { CanopyException } from '@canopy/common';
import {
  makeUsage,
  type Actor,
  type Message,
  type Scope,
  type ShareView,
  type TreeNode,
  type Usage,
} from '@canopy/core';
import { Database, isUuid, writeAudit } from '@canopy/store';
import { decodeCursor, encodeCursor } from './listing-cursor';

export interface NewShare {
  sessionId: string;
  nodeId: number;
  path: number[];
  tokenHash: string;
  title: string | null;
  includeUsage: boolean;
  userId: string | null;
  actor: Actor;
  expiresAt: Date | null;
}

/** What reading a link needs: whose it is and which path it shows. */
export interface ShareRecord extends ShareView {
  tenantId: string;
  path: number[];
  tokenHash: string;
}

interface ShareRow {
  id: string;
  tenant_id: string;
  session_id: string;
  node_id: number;
  path: number[];
  token_hash: string;
  title: string | null;
  include_usage: boolean;
  user_id: string | null;
  expires_at: Date | null;
  created_at: Date;
}

interface NodeRow {
  id: number;
  parent_id: number | null;
  message: Message;
  usage: Partial<Usage> | null;
}

const COLUMNS = `id, tenant_id::text AS tenant_id, session_id, node_id, path, token_hash, title, include_usage, user_id,
                 expires_at, created_at`;

export class SharesRepository {
  constructor(private readonly db: Database) {}

  async create(scope: Scope, input: NewShare): Promise<ShareRecord> {
    return this.db.withTenantSql(scope, async (tx) => {
      const [row] = await tx.query<ShareRow>(
        `INSERT INTO shares (tenant_id, session_id, node_id, path, token_hash, title, include_usage, user_id, actor,
                             expires_at)
         VALUES ($1::uuid, $2, $3, $4::int[], $5, $6, $7, $8, $9::jsonb, $10::timestamptz)
         RETURNING ${COLUMNS}`,
        [
          scope.tenantId,
          input.sessionId,
          input.nodeId,
          input.path,
          input.tokenHash,
          input.title,
          input.includeUsage,
          input.userId,
          JSON.stringify(input.actor),
          input.expiresAt,
        ],
      );
      const share = toRecord(row!);
      await tx.query(`SELECT canopy_webhook_enqueue($1::uuid, 'session.shared', $2::jsonb)`, [
        scope.tenantId,
        JSON.stringify({
          shareId: share.id,
          sessionId: share.sessionId,
          nodeId: share.nodeId,
          userId: share.userId,
          title: share.title,
          expiresAt: share.expiresAt,
        }),
      ]);
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'share.create',
        targetType: 'share',
        targetId: share.id,
        after: { sessionId: share.sessionId, nodeId: share.nodeId, expiresAt: share.expiresAt },
      });
      return share;
    });
  }

  /** The tenant's links, newest first (a user token: those of its own sessions), optionally of one session. */
  async list(
    scope: Scope,
    filter: { sessionId?: string; limit: number; cursor?: string },
  ): Promise<{ data: ShareView[]; nextCursor: string | null }> {
    const params: unknown[] = [scope.tenantId];
    const where = ['tenant_id = $1::uuid'];
    if (scope.userId !== undefined) {
      params.push(scope.userId);
      where.push(`user_id = $${params.length}`);
    }
    if (filter.sessionId !== undefined) {
      params.push(filter.sessionId);
      where.push(`session_id = $${params.length}`);
    }
    if (filter.cursor !== undefined) {
      const after = decodeCursor(filter.cursor);
      params.push(after.createdAt, after.id);
      where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    params.push(filter.limit + 1);
    const rows = await this.db.withTenantSql(scope, (tx) =>
      tx.query<ShareRow>(
        `SELECT ${COLUMNS} FROM shares WHERE ${where.join(' AND ')}
          ORDER BY created_at DESC, id DESC LIMIT $${params.length}::int`,
        params,
      ),
    );
    const page = rows.slice(0, filter.limit).map(toRecord);
    const last = page[page.length - 1];
    return {
      data: page.map(toView),
      nextCursor: rows.length > filter.limit && last ? encodeCursor(last) : null,
    };
  }

  /** Revokes a link at once (a user token: only one of its own sessions'). */
  async delete(scope: Scope, id: string): Promise<void> {
    if (!isUuid(id)) throw CanopyException.notFound('share');
    await this.db.withTenantSql(scope, async (tx) => {
      const [row] = await tx.query<ShareRow>(
        `DELETE FROM shares WHERE tenant_id = $1::uuid AND id = $2::uuid AND ($3::text IS NULL OR user_id = $3)
         RETURNING ${COLUMNS}`,
        [scope.tenantId, id, scope.userId ?? null],
      );
      if (!row) throw CanopyException.notFound('share');
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'share.revoke',
        targetType: 'share',
        targetId: id,
        before: { sessionId: row.session_id, nodeId: row.node_id },
      });
    });
  }

  /** The live (not expired) link whose token hashes to this, whichever tenant's; null for none. */
  async findByHash(tokenHash: string): Promise<ShareRecord | null> {
    const [row] = await this.db.withAdminSql(
      'a shared link is found by its token before its tenant is known',
      (tx) =>
        tx.query<ShareRow>(
          `SELECT ${COLUMNS} FROM shares
            WHERE token_hash = $1 AND (expires_at IS NULL OR expires_at > now())`,
          [tokenHash],
        ),
    );
    return row ? toRecord(row) : null;
  }

  /** The nodes of a link's path, read as its tenant (real and a fork's shared ones alike), in path order. */
  async pathNodes(share: ShareRecord): Promise<TreeNode[]> {
    const rows = await this.db.withTenantSql({ tenantId: share.tenantId }, (tx) =>
      tx.query<NodeRow>(
        `SELECT id, parent_id, message, usage FROM canopy_session_nodes($1::uuid, $2::text, $3::int[])`,
        [share.tenantId, share.sessionId, share.path],
      ),
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return share.path.flatMap((id) => {
      const row = byId.get(id);
      return row
        ? [
            {
              id,
              parentId: row.parent_id,
              message: row.message,
              usage: row.usage ? makeUsage(row.usage) : null,
            },
          ]
        : [];
    });
  }
}

function toRecord(row: ShareRow): ShareRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    sessionId: row.session_id,
    nodeId: row.node_id,
    path: row.path,
    tokenHash: row.token_hash,
    title: row.title,
    includeUsage: row.include_usage,
    userId: row.user_id,
    expiresAt: row.expires_at ? row.expires_at.toISOString() : null,
    createdAt: row.created_at.toISOString(),
  };
}

export function toView(share: ShareRecord): ShareView {
  return {
    id: share.id,
    sessionId: share.sessionId,
    nodeId: share.nodeId,
    title: share.title,
    includeUsage: share.includeUsage,
    userId: share.userId,
    expiresAt: share.expiresAt,
    createdAt: share.createdAt,
  };
}
