// Builds the assistant message of one model call while its stream parts are produced, so every gateway emits
// the same part sequence (start, deltas, end per block; finish last) with block indexes that match the final
// message.

import type { AssistantBlock, Message, ThinkingBlock, ToolUseBlock, Usage } from '@canopy/core';
import type { FinishReason, ModelStreamPart } from './model-gateway.port';

type Part<T extends ModelStreamPart['type']> = Extract<ModelStreamPart, { type: T }>;

export class AssistantMessageBuilder {
  private readonly blocks: AssistantBlock[] = [];
  /** Streamed argument JSON of tool_use blocks not yet ended, by index. */
  private readonly toolInput = new Map<number, string>();

  startText(): Part<'text_start'> {
    return { type: 'text_start', index: this.push({ type: 'text', text: '' }) };
  }

  appendText(index: number, delta: string): Part<'text_delta'> {
    const block = this.blocks[index];
    if (block?.type === 'text') block.text += delta;
    return { type: 'text_delta', index, delta };
  }

  endText(index: number): Part<'text_end'> {
    return { type: 'text_end', index };
  }

  startThinking(): Part<'thinking_start'> {
    return { type: 'thinking_start', index: this.push({ type: 'thinking', text: '' }) };
  }

  appendThinking(index: number, delta: string): Part<'thinking_delta'> {
    const block = this.blocks[index];
    if (block?.type === 'thinking') block.text += delta;
    return { type: 'thinking_delta', index, delta };
  }

  endThinking(index: number, signature?: string): Part<'thinking_end'> {
    const block = this.blocks[index] as ThinkingBlock | undefined;
    if (signature !== undefined && block) block.signature = signature;
    return signature === undefined
      ? { type: 'thinking_end', index }
      : { type: 'thinking_end', index, signature };
  }

  startToolUse(id: string, name: string): Part<'tool_use_start'> {
    const index = this.push({ type: 'tool_use', id, name, input: {} });
    this.toolInput.set(index, '');
    return { type: 'tool_use_start', index, id, name };
  }

  appendToolInput(index: number, delta: string): Part<'tool_use_delta'> {
    this.toolInput.set(index, (this.toolInput.get(index) ?? '') + delta);
    return { type: 'tool_use_delta', index, id: this.toolUse(index).id, delta };
  }

  /** Ends a tool_use block with its parsed input; without one, the streamed JSON is parsed here. */
  endToolUse(index: number, input?: unknown): Part<'tool_use_end'> {
    const block = this.toolUse(index);
    block.input = input !== undefined ? input : parseToolInput(this.toolInput.get(index) ?? '');
    this.toolInput.delete(index);
    return { type: 'tool_use_end', index, block: { ...block } };
  }

  hasToolUse(): boolean {
    return this.blocks.some((b) => b.type === 'tool_use');
  }

  finish(usage: Usage, finishReason: FinishReason): Part<'finish'> {
    const message: Message = {
      role: 'assistant',
      content: this.blocks.map((b) => ({ ...b })),
      timestamp: Date.now(),
    };
    return { type: 'finish', message, usage, finishReason };
  }

  private push(block: AssistantBlock): number {
    this.blocks.push(block);
    return this.blocks.length - 1;
  }

  private toolUse(index: number): ToolUseBlock {
    const block = this.blocks[index];
    if (block?.type !== 'tool_use') throw new Error(`block ${index} is not a tool_use block`);
    return block;
  }
}

/** Streamed tool arguments: empty means no arguments; JSON that does not parse is kept as the raw string. */
export function parseToolInput(json: string): unknown {
  if (json.trim() === '') return {};
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return json;
  }
}
