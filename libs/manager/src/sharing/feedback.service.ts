// Feedback on replies: a rating (up or down, a comment, tags) per rater and assistant node, changeable and
// removable, listed and exported with the turn it rates. The rater is a user token's user, or the end user a tenant
// key names (`userId`), or no one (a tenant key rating for itself). The turn is read from the tree when the rating
// is given (its nodes never change): the prompt that starts it, the reply's text from that prompt down through
// the rated node and on along the selected branch to the turn's end, and the usage of those nodes.

import { CanopyException } from '@canopy/common';
import {
  isTurnBoundary,
  joinText,
  sumUsage,
  type FeedbackExportQuery,
  type FeedbackQuery,
  type FeedbackView,
  type PutFeedbackRequest,
  type Scope,
  type Tree,
  type TreeNode,
} from '@canopy/core';
import type { SessionService } from '@canopy/session';
import { FeedbackRepository, type FeedbackFilter } from './feedback.repository';

/** Ratings per page of the export. */
const EXPORT_PAGE = 500;

export class FeedbackService {
  constructor(
    private readonly sessions: SessionService,
    private readonly feedback: FeedbackRepository,
  ) {}

  async put(
    scope: Scope,
    sessionId: string,
    nodeId: number,
    input: PutFeedbackRequest,
  ): Promise<{ feedback: FeedbackView; created: boolean }> {
    const userId = raterOf(scope, input.userId);
    const { session, tree } = await this.sessions.loadTree(scope, sessionId);
    const node = tree.getNode(nodeId);
    if (!node) throw CanopyException.notFound('node');
    if (node.message.role !== 'assistant')
      throw new CanopyException('not_assistant_node', 'feedback rates a reply: an assistant node');
    const turn = turnOf(tree, nodeId);
    return this.feedback.put(scope, {
      sessionId,
      nodeId,
      userId,
      rating: input.rating,
      comment: input.comment ?? null,
      tags: [...new Set(input.tags ?? [])],
      model: session.model,
      promptNodeId: turn.prompt.id,
      prompt: joinText(turn.prompt.message.content),
      reply: turn.reply
        .map((n) => joinText(n.message.content))
        .filter(Boolean)
        .join('\n\n'),
      usage: sumUsage(turn.reply.map((n) => n.usage)),
    });
  }

  async delete(scope: Scope, sessionId: string, nodeId: number, userId: string | undefined): Promise<void> {
    const rater = raterOf(scope, userId);
    if (!Number.isSafeInteger(nodeId) || nodeId < 1 || nodeId > 2 ** 31 - 1)
      throw CanopyException.notFound('node');
    // The session must be the caller's to reach (a user token: its own), as for putting a rating.
    await this.sessions.loadTree(scope, sessionId);
    await this.feedback.delete(scope, sessionId, nodeId, rater);
  }

  /** A user token reads its own ratings only. */
  list(scope: Scope, query: FeedbackQuery): Promise<{ data: FeedbackView[]; nextCursor: string | null }> {
    return this.feedback.list(scope, filterOf(scope, query), query.limit, query.cursor ?? null);
  }

  /** Every rating matching the filter, newest first, a page at a time. */
  async *export(scope: Scope, query: FeedbackExportQuery): AsyncGenerator<FeedbackView> {
    const filter = filterOf(scope, query);
    let cursor: string | null = null;
    do {
      const page = await this.feedback.list(scope, filter, EXPORT_PAGE, cursor);
      yield* page.data;
      cursor = page.nextCursor;
    } while (cursor !== null);
  }
}

function raterOf(scope: Scope, requested: string | undefined): string | null {
  if (scope.userId !== undefined) {
    if (requested !== undefined && requested !== scope.userId)
      throw CanopyException.badRequest('userId is for a tenant key (a user token rates as its user)', {
        field: 'userId',
      });
    return scope.userId;
  }
  return requested ?? null;
}

function filterOf(scope: Scope, query: FeedbackExportQuery): FeedbackFilter {
  const { userId, ...rest } = query;
  if (scope.userId !== undefined && userId !== undefined && userId !== scope.userId)
    throw CanopyException.badRequest('userId is for a tenant key (a user token reads its own feedback)', {
      field: 'userId',
    });
  const rater = scope.userId ?? userId;
  return { ...rest, ...(rater !== undefined ? { userId: rater } : {}) };
}

/** The turn a reply node belongs to: its prompt, and its assistant side down the selected branch. */
function turnOf(tree: Tree, nodeId: number): { prompt: TreeNode; reply: TreeNode[] } {
  const path = tree.pathTo(nodeId).map((id) => tree.getNode(id)!);
  let start = path.length - 1;
  while (start > 0 && !isTurnBoundary(path[start]!.message)) start--;
  const prompt = path[start]!;
  const reply = path.slice(start + 1);
  const selected = tree.selectedChildren();
  for (let id = nodeId; ;) {
    const children = tree.children(id);
    const next = selected[String(id)] ?? children[children.length - 1];
    const child = next === undefined ? undefined : tree.getNode(next);
    if (!child || isTurnBoundary(child.message)) break;
    reply.push(child);
    id = child.id;
  }
  return { prompt, reply };
}
