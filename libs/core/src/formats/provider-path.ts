// The active path shaped for a provider's request, what the OpenAI and Anthropic exports share. A provider takes a
// conversation as turns in which every tool call is answered in the very next turn and no result answers nothing;
// a Canopy tree holds whatever was written (consecutive messages of one role, a run paused on a tool call, a
// conversation imported before such input was refused). So, in one pass, linear in the blocks of the path:
// consecutive messages of a role form one turn; a tool result is kept when it answers a call of the turn just
// before (once), a call when it is answered; blank text and blocks the format has no place for are left out; a
// turn left empty disappears, its neighbours then forming one turn. Tool ids come out unique across the request
// and in the format's alphabet, a call and its result keeping the same one.

import type { Block, Message, Role, ToolResultBlock, ToolUseBlock } from '../message';

export interface ProviderPathOptions {
  /** The thinking blocks kept: `signed` (Anthropic takes back only signed ones) or `none`. */
  thinking: 'signed' | 'none';
  /** A tool id fitted to the format's alphabet (then made unique). */
  fitToolId: (id: string) => string;
}

export interface ProviderTurn {
  role: Role;
  /** A user turn's tool results, each answering a call of the assistant turn before it, in their order. */
  results: ToolResultBlock[];
  /**
   * The turn's other blocks, message by message, none empty: text, attachments, and for an assistant turn its
   * signed thinking and its answered tool calls (ids as in the request).
   */
  messages: Block[][];
}

interface Call {
  /** The first tool_use of this id in the turn (a later one with the same id answers nothing). */
  block: ToolUseBlock;
  /** The id in the request, once a result answered it. */
  id: string | null;
}

interface Turn extends ProviderTurn {
  /** An assistant turn's calls by their id in the tree, until the turn after it is complete. */
  calls: Map<string, Call> | null;
}

export function providerTurns(messages: readonly Message[], options: ProviderPathOptions): ProviderTurn[] {
  const turns: Turn[] = [];
  const ids = new RequestIds(options.fitToolId);
  for (const m of messages) {
    if (m.role === 'assistant') {
      const blocks = assistantBlocks(m.content, options);
      if (blocks.length === 0) continue;
      if (turns.at(-1)?.role === 'user') settle(turns);
      let turn = turns.at(-1);
      if (turn?.role !== 'assistant') {
        turn = { role: 'assistant', results: [], messages: [], calls: new Map() };
        turns.push(turn);
      }
      turn.messages.push(blocks);
      for (const b of blocks) {
        if (b.type === 'tool_use' && !turn.calls!.has(b.id)) turn.calls!.set(b.id, { block: b, id: null });
      }
      continue;
    }
    let turn = turns.at(-1);
    const calls = (turn?.role === 'user' ? turns.at(-2) : turn)?.calls ?? null;
    const results: ToolResultBlock[] = [];
    const rest: Block[] = [];
    for (const b of m.content) {
      if (b.type === 'tool_result') {
        const call = calls?.get(b.toolUseId);
        if (!call || call.id !== null) continue; // answers nothing, or a call already answered
        call.id = ids.take(b.toolUseId);
        results.push({ ...b, toolUseId: call.id });
      } else if ((b.type === 'text' && b.text.trim() !== '') || b.type === 'attachment') rest.push(b);
      // thinking and tool_use have no meaning in a user message
    }
    if (results.length === 0 && rest.length === 0) continue;
    if (turn?.role !== 'user') {
      turn = { role: 'user', results: [], messages: [], calls: null };
      turns.push(turn);
    }
    for (const r of results) turn.results.push(r);
    if (rest.length) turn.messages.push(rest);
  }
  if (turns.at(-1)?.role === 'user') settle(turns);
  else if (turns.length) {
    // A last assistant turn's calls have no answer (a run paused on them): left out, as the turn if nothing else.
    const last = turns.at(-1)!;
    prune(last);
    if (last.messages.length === 0) turns.pop();
  }
  return turns;
}

/**
 * The user turn at the end is complete: the assistant turn before it keeps the calls it answered (with their
 * request ids). If none is left of it, the user turns around it become one.
 */
function settle(turns: Turn[]): void {
  const assistant = turns.at(-2);
  if (!assistant || assistant.role !== 'assistant' || !assistant.calls) return;
  prune(assistant);
  if (assistant.messages.length) return;
  const user = turns.pop()!;
  turns.pop();
  const before = turns.at(-1);
  if (!before) {
    turns.push(user);
    return;
  }
  // The calls it had were all unanswered, so `user` has no results: only its other blocks move.
  for (const blocks of user.messages) before.messages.push(blocks);
}

/** An assistant turn without its unanswered calls (and their duplicates); answered ones take their request id. */
function prune(turn: Turn): void {
  const calls = turn.calls;
  if (!calls) return;
  turn.calls = null;
  if (calls.size === 0) return;
  const kept: Block[][] = [];
  for (const blocks of turn.messages) {
    const out: Block[] = [];
    for (const b of blocks) {
      if (b.type !== 'tool_use') out.push(b);
      else {
        const call = calls.get(b.id)!;
        if (call.block === b && call.id !== null) out.push({ ...b, id: call.id });
      }
    }
    if (out.length) kept.push(out);
  }
  turn.messages = kept;
}

function assistantBlocks(content: readonly Block[], options: ProviderPathOptions): Block[] {
  const out: Block[] = [];
  for (const b of content) {
    switch (b.type) {
      case 'text':
        if (b.text.trim() !== '') out.push(b);
        break;
      case 'thinking':
        if (options.thinking === 'signed' && b.signature) out.push(b);
        break;
      case 'tool_use':
      case 'attachment':
        out.push(b);
        break;
      case 'tool_result':
        break; // results travel in user messages
    }
  }
  return out;
}

/** Tool ids unique across one request: a repeated id takes the next free `_2`, `_3`... (amortized linear). */
class RequestIds {
  private readonly used = new Set<string>();
  private readonly next = new Map<string, number>();

  constructor(private readonly fit: (id: string) => string) {}

  take(id: string): string {
    const base = this.fit(id) || 'call';
    if (!this.used.has(base)) {
      this.used.add(base);
      return base;
    }
    let n = this.next.get(base) ?? 2;
    while (this.used.has(`${base}_${n}`)) n++;
    this.next.set(base, n + 1);
    const unique = `${base}_${n}`;
    this.used.add(unique);
    return unique;
  }
}
