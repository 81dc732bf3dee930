// What the next run from a node would send (GET /v1/sessions/:id/context): the path from the root to the node under
// the session's context policy, counted as a run counts it.

import type { ContextSummary, ContextView, Message, NodeId } from '@canopy/core';
import type { ModelToolSpec } from '../model/model-gateway.port';
import type { ModelLimits } from '../model/model-limits';
import { contextPolicyOf, planContext, reserveFor } from './context-plan';
import { summaryOnPath, systemWithSummary } from './summary';
import { tokenCounterFor } from './tokens';

export interface ContextViewInput {
  /** The node the view is of (null: an empty session). */
  nodeId: NodeId | null;
  /** The nodes from the root to it. */
  path: ReadonlyArray<{ id: NodeId; message: Message }>;
  model: string;
  system: string | null;
  opts: Record<string, unknown>;
  tools: readonly ModelToolSpec[];
  limits: ModelLimits;
  /** Summaries stored against nodes of the path (read for the `summarize` policy only). */
  summaries?: readonly ContextSummary[];
}

export function contextView(input: ContextViewInput): ContextView {
  // A model whose window is not known has no limit to keep: its figures are estimates, and no tokenizer is loaded.
  const counter = tokenCounterFor(input.model, { estimate: input.limits.contextWindow === null });
  const policy = contextPolicyOf(input.opts);
  // The nearest summary on the path stands for the turns it covers, as in a run.
  const onPath =
    policy.strategy === 'summarize'
      ? summaryOnPath(
          input.path.map((n) => n.id),
          input.summaries ?? [],
        )
      : null;
  const path = onPath ? input.path.slice(onPath.index + 1) : input.path;
  const summary = onPath?.summary ?? null;
  const messages = path.map((n) => n.message);
  const tokens = messages.map((m) => counter.message(m));
  const { contextWindow: window, maxOutputTokens } = input.limits;
  const plan = planContext({
    messages,
    tokens,
    fixedTokens: counter.system(systemWithSummary(input.system, summary)) + counter.tools(input.tools),
    window,
    maxOutputTokens,
    policy,
  });
  return {
    nodeId: input.nodeId,
    strategy: policy.strategy,
    window,
    reserveOutputTokens: window === null ? null : reserveFor(policy, window, maxOutputTokens),
    tokens: plan.tokens,
    fits: plan.fits,
    summary,
    dropped: plan.dropped + (input.path.length - path.length),
    messages: plan.sent.map((i) => ({
      nodeId: path[i]!.id,
      role: messages[i]!.role,
      tokens: tokens[i]!,
    })),
  };
}
