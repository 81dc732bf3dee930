// Share links: make one for a session's path (the head's by default), list and revoke them, read one by its token
// with no credential, and continue one (a fork into the reader's own session, in the link's tenant only). A token
// is 32 random bytes (base64url, `shr_` first), kept as its sha256: looked up by that hash, then compared in
// constant time. What a link answers is its title and the turns of its path, nothing of who or where (no tenant,
// user or session ids, no metadata; usage only when the link says so).

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { CanopyException } from '@canopy/common';
import {
  actorOf,
  allTurns,
  Tree,
  TurnProjectionError,
  tenantScope,
  type CreateShareRequest,
  type CreatedShareView,
  type Scope,
  type SessionInfo,
  type SharedConversationView,
  type ShareView,
} from '@canopy/core';
import type { SessionService } from '@canopy/session';
import type { SessionCatalogService } from '../catalog';
import { SharesRepository, toView, type ShareRecord } from './shares.repository';

const TOKEN_PREFIX = 'shr_';
const TOKEN = /^shr_[A-Za-z0-9_-]{43}$/;

export class SharesService {
  constructor(
    private readonly sessions: SessionService,
    private readonly shares: SharesRepository,
    private readonly catalog: SessionCatalogService,
  ) {}

  /** A link to the path root -> nodeId (default: the head) of a session the scope can read. `origin`: the web UI's. */
  async create(
    scope: Scope,
    sessionId: string,
    input: CreateShareRequest,
    origin: string,
  ): Promise<CreatedShareView> {
    const { session, tree } = await this.sessions.loadTree(scope, sessionId);
    const nodeId = input.nodeId ?? tree.head;
    if (nodeId === null)
      throw CanopyException.badRequest('the session has no messages to share', { field: 'nodeId' });
    if (!tree.getNode(nodeId)) throw CanopyException.notFound('node');
    const expiresAt = input.expiresAt === undefined ? null : new Date(input.expiresAt);
    if (expiresAt && expiresAt.getTime() <= Date.now())
      throw CanopyException.badRequest('expiresAt must be in the future', { field: 'expiresAt' });
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const share = await this.shares.create(scope, {
      sessionId,
      nodeId,
      path: tree.pathTo(nodeId),
      tokenHash: hashToken(token),
      title: input.title === undefined ? session.title : input.title,
      includeUsage: input.includeUsage ?? false,
      userId: session.userId,
      actor: actorOf(scope),
      expiresAt,
    });
    return { ...toView(share), token, url: `${origin}/#/shared/${token}` };
  }

  list(
    scope: Scope,
    filter: { sessionId?: string; limit: number; cursor?: string },
  ): Promise<{ data: ShareView[]; nextCursor: string | null }> {
    return this.shares.list(scope, filter);
  }

  revoke(scope: Scope, id: string): Promise<void> {
    return this.shares.delete(scope, id);
  }

  /** What a link shows, to anyone holding its token. 404 for a token that is not a live link. */
  async read(token: string): Promise<SharedConversationView> {
    const share = await this.find(token);
    const nodes = await this.shares.pathNodes(share);
    // Only the path's nodes: no turn can name a branch off it (edits and regenerations hold just their own id).
    const tree = Tree.hydrate({ nodes, path: nodes.map((n) => n.id), partial: true });
    let turns;
    try {
      turns = allTurns(tree);
    } catch (err) {
      if (err instanceof TurnProjectionError) throw new CanopyException('internal', err.message);
      throw err;
    }
    return {
      title: share.title,
      sharedAt: share.createdAt,
      turns: turns.map((t) => ({
        id: t.id!,
        resId: t.resId,
        userText: t.userText,
        userAttachments: t.userAttachments,
        userTimestamp: t.userTimestamp,
        content: t.content,
        toolResults: t.toolResults,
        timestamp: t.timestamp,
        ...(share.includeUsage ? { usage: t.usage } : {}),
      })),
    };
  }

  /**
   * "Continue this conversation": a new session of the caller's (a user token's user; a tenant key's `userId`, or
   * the sharer's when none) holding the link's path, forked copy-on-write. Only inside the link's tenant: any
   * other caller gets 404, as for a token that is not a link.
   */
  async fork(scope: Scope, token: string, input: { title?: string | null }): Promise<SessionInfo> {
    const share = await this.find(token);
    if (share.tenantId !== scope.tenantId) throw CanopyException.notFound('share');
    return this.catalog.fork(tenantScope(share.tenantId), share.sessionId, {
      nodeId: share.nodeId,
      title: input.title === undefined ? share.title : input.title,
      metadata: { sharedFrom: share.id },
      ...(scope.userId !== undefined ? { userId: scope.userId } : {}),
    });
  }

  private async find(token: string): Promise<ShareRecord> {
    if (!TOKEN.test(token)) throw CanopyException.notFound('share');
    const hash = hashToken(token);
    const share = await this.shares.findByHash(hash);
    // The lookup went by the hash (an index probe whose timing says nothing of the token itself); the match is
    // confirmed in constant time all the same.
    if (!share || !timingSafeEqual(Buffer.from(share.tokenHash, 'hex'), Buffer.from(hash, 'hex')))
      throw CanopyException.notFound('share');
    return share;
  }
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
