// What a run keeps when a newer prompt interrupts it (`ifBusy: "interrupt"`, LangGraph's double-texting
// interrupt): its completed steps — the prompt, each finished model message, each completed tool round — then the
// text the model call in progress had streamed, as a partial assistant message. The tree must stay valid for the
// next model call: a tool round in progress is closed with an error result for each of its tool uses (as a hook
// halt closes one), and of the partial message only its text is kept (a partial thinking block has no signature a
// provider would take back, a partial tool use never ran). The last kept message is marked `interrupted`.

import {
  isTextBlock,
  toolResultMessage,
  toolUses,
  type Message,
  type TextBlock,
  type ToolResultBlock,
} from '@canopy/core';
import type { PendingState, ToolCallState } from './run-state';
import { errorResult } from './tool-executor';

/** The result a tool use of an interrupted round gets when it had none. */
export const INTERRUPTED_TOOL_RESULT = 'not completed: the run was interrupted by a newer prompt';

/**
 * The messages an interrupted run keeps: `completed` (its messages since its last commit, each finished) with an
 * open tool round closed, then the text `streaming` had (the model call in progress, null when none), the last
 * one marked. Empty when there is nothing to keep.
 */
export function keptOnInterrupt(completed: readonly Message[], streaming: Message | null): Message[] {
  const kept = [...completed];
  const last = kept[kept.length - 1];
  const open = last?.role === 'assistant' ? toolUses(last) : [];
  if (open.length > 0) {
    kept.push(toolResultMessage(open.map((use) => errorResult(use.id, INTERRUPTED_TOOL_RESULT))));
  }
  const text = (streaming?.content ?? []).filter(
    (b): b is TextBlock => isTextBlock(b) && b.text.trim() !== '',
  );
  if (streaming && text.length > 0)
    kept.push({ role: 'assistant', content: text, timestamp: streaming.timestamp });
  return markLast(kept);
}

/**
 * What a paused run keeps when interrupted: its messages, and its tool round closed with the results it has
 * (tools that ran, rejections, results a client supplied) and an error result for each call still waiting.
 */
export function keptOnInterruptWhilePaused(pending: PendingState): Message[] {
  if (pending.calls.length === 0) return keptOnInterrupt(pending.messages, null);
  const results = pending.calls.map(resultOf);
  return markLast([...pending.messages, toolResultMessage(results)]);
}

function resultOf(call: ToolCallState): ToolResultBlock {
  if (call.result) return call.result;
  const d = call.decision;
  if (d?.type === 'reject')
    return errorResult(call.block.id, `Tool rejected${d.reason ? `: ${d.reason}` : ''}`);
  if (d?.type === 'result') {
    return {
      type: 'tool_result',
      toolUseId: call.block.id,
      content: d.content as ToolResultBlock['content'],
      isError: d.isError === true,
    };
  }
  return errorResult(call.block.id, INTERRUPTED_TOOL_RESULT);
}

function markLast(messages: Message[]): Message[] {
  const last = messages[messages.length - 1];
  if (last) messages[messages.length - 1] = { ...last, interrupted: true };
  return messages;
}
