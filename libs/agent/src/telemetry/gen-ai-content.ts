// Canopy's messages in the shape the GenAI conventions give message content on spans (gen_ai.input.messages,
// gen_ai.output.messages, gen_ai.system_instructions: JSON of roles and parts). Only recorded when the operator
// opted in (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). Attachments are named by their media type alone:
// neither their bytes nor their URL (which may carry a signature) reach a span.

import type { Block, Message, ToolResultBlock } from '@canopy/core';

type Part = Record<string, unknown>;

function partOf(block: Block): Part {
  switch (block.type) {
    case 'text':
      return { type: 'text', content: block.text };
    case 'thinking':
      return { type: 'reasoning', content: block.text };
    case 'tool_use':
      return { type: 'tool_call', id: block.id, name: block.name, arguments: block.input };
    case 'tool_result':
      return { type: 'tool_call_response', id: block.toolUseId, response: resultText(block) };
    case 'attachment':
      return { type: 'file', mime_type: block.mediaType };
  }
}

/** A tool result's content as text (attachments by their media type). */
export function resultText(result: Pick<ToolResultBlock, 'content'>): string {
  if (typeof result.content === 'string') return result.content;
  return result.content.map((b) => (b.type === 'text' ? b.text : `[${b.mediaType}]`)).join('\n');
}

/** Messages as gen_ai.input.messages / gen_ai.output.messages (tool results are the `tool` role's). */
export function messagesJson(messages: readonly Message[], finishReason?: string): string {
  return JSON.stringify(
    messages.map((m) => {
      const toolResults =
        m.role === 'user' && m.content.length > 0 && m.content.every((b) => b.type === 'tool_result');
      return {
        role: toolResults ? 'tool' : m.role,
        parts: m.content.map(partOf),
        ...(finishReason !== undefined ? { finish_reason: finishReason } : {}),
      };
    }),
  );
}

/** A system prompt as gen_ai.system_instructions. */
export function systemJson(system: string): string {
  return JSON.stringify([{ type: 'text', content: system }]);
}
