// What the next run from a node would send (GET /v1/sessions/:id/context): the path from the root to the node under
// the session's context policy, counted as a run counts it.

import type { ContextView, Message, NodeId } from '@canopy/core';
import type { ModelToolSpec } from '../model/model-gateway.port';
import type { ModelLimits } from '../model/model-limits';
import { contextPolicyOf, planContext, reserveFor } from './context-plan';
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
}

export function contextView(input: ContextViewInput): ContextView {
  const counter = tokenCounterFor(input.model);
  const policy = contextPolicyOf(input.opts);
  const messages = input.path.map((n) => n.message);
  const tokens = messages.map((m) => counter.message(m));
  const { contextWindow: window, maxOutputTokens } = input.limits;
  const plan = planContext({
    messages,
    tokens,
    fixedTokens: counter.system(input.system) + counter.tools(input.tools),
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
    summary: null,
    dropped: plan.dropped,
    messages: plan.sent.map((i) => ({
      nodeId: input.path[i]!.id,
      role: messages[i]!.role,
      tokens: tokens[i]!,
    })),
  };
}
