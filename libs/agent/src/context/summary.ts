// The parts of the `summarize` context policy that need no model: how a summary rides in a request (in the system
// prompt, so that the messages still start with a user turn), which turns a new summary covers, and the transcript
// the summarizing call is given. The turn runner makes the call and stores the result.

import {
  isToolResultBlock,
  isToolUseBlock,
  joinText,
  toolResultText,
  type ContextSummary,
  type Message,
} from '@canopy/core';
import { turnStarts } from './context-plan';

/** Runs summarize once the request passes this share of what the window leaves for it. */
export const DEFAULT_TRIGGER_RATIO = 0.8;

/** What a new summary aims to leave of the window's budget for the turns after it (room to grow again). */
export const SUMMARY_TARGET_RATIO = 0.5;

/** The longest summary asked of a model, in tokens (a quarter of its window when that is less). */
export const SUMMARY_MAX_TOKENS = 1_024;

/** How long a summary may be for a summarizing model of this window (null: unknown). */
export function summaryLength(window: number | null): number {
  return window === null ? SUMMARY_MAX_TOKENS : Math.min(SUMMARY_MAX_TOKENS, Math.floor(window / 4));
}

export const DEFAULT_SUMMARY_PROMPT =
  'Summarize the conversation below so that it can continue without it. Keep every fact, name, number, decision, ' +
  'preference the user stated and task still open; drop pleasantries. Write in the conversation’s language, as ' +
  'short notes. If an earlier summary is given, the new summary replaces it: carry over what still matters.';

/** The system prompt a request sends with a summary in use. */
export function systemWithSummary(system: string | null, summary: ContextSummary | null): string | null {
  if (!summary) return system;
  const block = `Summary of the earlier conversation (its older turns are not repeated below):\n${summary.text}`;
  return system ? `${system}\n\n${block}` : block;
}

/**
 * The summary in use on a path: the one stored against the node nearest the end of the path's committed part,
 * with its index in `nodeIds`; null when none of them has one.
 */
export function summaryOnPath(
  nodeIds: readonly number[],
  summaries: readonly ContextSummary[],
): { summary: ContextSummary; index: number } | null {
  const byNode = new Map(summaries.map((s) => [s.throughNodeId, s]));
  for (let i = nodeIds.length - 1; i >= 0; i--) {
    const summary = byNode.get(nodeIds[i]!);
    if (summary) return { summary, index: i };
  }
  return null;
}

export interface CutInput {
  /** The messages after the summary in use (or all), each with its tokens. */
  messages: readonly Message[];
  tokens: readonly number[];
  /** How many of them are committed nodes (a summary covers committed nodes only). */
  committed: number;
  /** Tokens of the request besides these messages (system prompt, tools, the summary in use). */
  fixedTokens: number;
  /** What the request may take (the window less the reply's reserve). */
  budget: number;
  /** Tokens the summarizing call may be given (its model's budget), or null when unknown. */
  summarizerBudget: number | null;
}

/**
 * Where a new summary ends: the turn start `cut` such that messages[0, cut) are summarized. The earliest cut that
 * leaves the rest within SUMMARY_TARGET_RATIO of the budget, else the latest one possible; never the last turn,
 * only committed messages, and no more than the summarizing call can read. Null when no whole turn can be.
 */
export function summaryCut(input: CutInput): number | null {
  const { messages, tokens, committed, fixedTokens, budget, summarizerBudget } = input;
  const starts = turnStarts(messages);
  // Cuts: the starts of the second turn on, up to the last turn (kept), within the committed messages.
  const cuts = starts.slice(1, -1).filter((c) => c <= committed);
  if (cuts.length === 0) return null;
  const prefix: number[] = [0];
  for (const t of tokens) prefix.push(prefix[prefix.length - 1]! + t);
  const total = prefix[prefix.length - 1]!;
  const readable = (c: number) => summarizerBudget === null || prefix[c]! <= summarizerBudget;
  const possible = cuts.filter(readable);
  if (possible.length === 0) return null;
  const target = budget * SUMMARY_TARGET_RATIO;
  return possible.find((c) => fixedTokens + total - prefix[c]! <= target) ?? possible[possible.length - 1]!;
}

/** The conversation as text for the summarizing call: who said what, tool calls and their results. */
export function transcript(messages: readonly Message[]): string {
  const lines: string[] = [];
  for (const m of messages) {
    for (const block of m.content) {
      if (block.type === 'text') lines.push(`${m.role === 'user' ? 'User' : 'Assistant'}: ${block.text}`);
      else if (isToolUseBlock(block))
        lines.push(`Assistant called ${block.name}(${JSON.stringify(block.input)})`);
      else if (isToolResultBlock(block)) {
        lines.push(`Tool result${block.isError ? ' (error)' : ''}: ${toolResultText(block)}`);
      } else if (block.type === 'attachment')
        lines.push(`(${m.role} attached ${block.name ?? block.mediaType})`);
    }
  }
  return lines.join('\n');
}

/** The one message the summarizing call is sent. */
export function summaryRequest(
  prompt: string | undefined,
  previous: ContextSummary | null,
  messages: readonly Message[],
): Message {
  const parts = [prompt ?? DEFAULT_SUMMARY_PROMPT];
  if (previous) parts.push(`Earlier summary:\n${previous.text}`);
  parts.push(`Conversation:\n${transcript(messages)}`);
  return { role: 'user', content: [{ type: 'text', text: parts.join('\n\n') }], timestamp: Date.now() };
}

/** The summary's text from the summarizing call's reply. */
export function summaryText(reply: Message): string {
  return joinText(reply.content).trim();
}
