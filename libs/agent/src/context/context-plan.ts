// What a run sends of its context: the session's context policy applied to the active path's messages and the
// run's own, counted in tokens against the model's window. Pure: the caller counts (see tokens.ts) and acts on the
// plan (the turn runner sends it or ends the run; GET /v1/sessions/:id/context shows it).
//
// A turn is a user message that is not a tool result and everything after it up to the next such message, so
// leaving out whole turns never parts a tool use from its result. The last turn (the one the run answers) and the
// system prompt are always sent.

import { contextPolicySchema, isTurnBoundary, type ContextPolicy, type Message } from '@canopy/core';

/** A session without `opts.context` sends everything and fails before the provider call when that is too much. */
export const DEFAULT_CONTEXT_POLICY: ContextPolicy = { strategy: 'none' };

/** A session's policy (`opts.context`, checked when it was saved); the default without one. */
export function contextPolicyOf(opts: Record<string, unknown>): ContextPolicy {
  if (opts.context === undefined) return DEFAULT_CONTEXT_POLICY;
  const parsed = contextPolicySchema.safeParse(opts.context);
  return parsed.success ? parsed.data : DEFAULT_CONTEXT_POLICY;
}

/** The reply's reserve when the policy names none: the model's output limit, capped here and at a quarter window. */
export const DEFAULT_RESERVE_CAP = 4_096;

export interface ContextPlanInput {
  messages: readonly Message[];
  /** Tokens of each message, in the same order. */
  tokens: readonly number[];
  /** Tokens sent besides the messages: the system prompt, the tools' schemas, hooks' injections. */
  fixedTokens: number;
  /** The model's context window; null when unknown (then everything is sent). */
  window: number | null;
  maxOutputTokens: number | null;
  policy: ContextPolicy;
}

export interface ContextPlan {
  /** Indices (into the input's messages) of what is sent, ascending. */
  sent: number[];
  /** Tokens of the request as planned: the fixed part and the sent messages. */
  tokens: number;
  window: number | null;
  /** What the request may take: the window less the reply's reserve; null when the window is unknown. */
  budget: number | null;
  /** Messages left out (the oldest whole turns). */
  dropped: number;
  /** Whether the request fits its budget. */
  fits: boolean;
}

/** The tokens kept free for the reply. */
export function reserveFor(policy: ContextPolicy, window: number, maxOutputTokens: number | null): number {
  if (policy.reserveOutputTokens !== undefined) return policy.reserveOutputTokens;
  return Math.min(maxOutputTokens ?? DEFAULT_RESERVE_CAP, DEFAULT_RESERVE_CAP, Math.floor(window / 4));
}

/**
 * Where each turn starts: index 0 always (messages before the first user prompt, as an imported conversation may
 * have, count as a turn of their own), then every user message that is not a tool result.
 */
export function turnStarts(messages: readonly Message[]): number[] {
  const starts: number[] = [];
  messages.forEach((m, i) => {
    if (i === 0 || isTurnBoundary(m)) starts.push(i);
  });
  return starts;
}

export function planContext(input: ContextPlanInput): ContextPlan {
  const { messages, tokens, fixedTokens, window, policy } = input;
  const all = messages.map((_, i) => i);
  const total = fixedTokens + tokens.reduce((sum, t) => sum + t, 0);
  if (window === null) {
    return { sent: all, tokens: total, window, budget: null, dropped: 0, fits: true };
  }
  const budget = Math.max(0, window - reserveFor(policy, window, input.maxOutputTokens));
  if (total <= budget || policy.strategy === 'none') {
    return { sent: all, tokens: total, window, budget, dropped: 0, fits: total <= budget };
  }
  // truncate: the oldest turns after the kept first ones go, one whole turn at a time, never the last.
  const starts = turnStarts(messages);
  const ends = [...starts.slice(1), messages.length];
  const keep = policy.keepFirstTurns ?? 0;
  const left = new Set<number>();
  let planned = total;
  for (let turn = keep; turn < starts.length - 1 && planned > budget; turn++) {
    for (let i = starts[turn]!; i < ends[turn]!; i++) {
      left.add(i);
      planned -= tokens[i]!;
    }
  }
  return {
    sent: all.filter((i) => !left.has(i)),
    tokens: planned,
    window,
    budget,
    dropped: left.size,
    fits: planned <= budget,
  };
}
