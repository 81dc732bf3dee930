// AI SDK fullStream parts -> Canopy's ModelStreamPart. Providers differ in how they interleave blocks (the
// OpenAI-compatible provider ends a text block only after a following tool call has streamed); Canopy's stream
// keeps at most one block open: a block that starts ends the one before it.

import type { TextStreamPart, ToolSet } from 'ai';
import type { Usage } from '@canopy/core';
import { AssistantMessageBuilder } from './assistant-message.builder';
import type { FinishReason, ModelResponse, ModelStreamPart } from './model-gateway.port';

type Kind = 'text' | 'thinking' | 'tool';

interface OpenBlock {
  kind: Kind;
  /** The AI SDK's id of the block (text and reasoning ids, tool call ids). */
  id: string;
  index: number;
  signature?: string;
}

export class StreamPartMapper {
  private readonly builder = new AssistantMessageBuilder();
  private open: OpenBlock | undefined;
  /** Tool calls whose block was ended before their tool-call part arrived. */
  private readonly endedTools = new Set<string>();

  /** The Canopy parts one AI SDK part stands for (often none: step markers, sources, raw chunks). */
  map(part: TextStreamPart<ToolSet>): ModelStreamPart[] {
    switch (part.type) {
      case 'text-start':
      case 'text-delta': {
        const out = this.ensureOpen('text', part.id);
        if (part.type === 'text-delta' && part.text !== '') {
          out.push(this.builder.appendText(this.openIndex(), part.text));
        }
        return out;
      }
      case 'text-end':
        return this.isOpen('text', part.id) ? this.close() : [];
      case 'reasoning-start':
      case 'reasoning-delta':
      case 'reasoning-end': {
        if (part.type === 'reasoning-end' && !this.isOpen('thinking', part.id)) return [];
        const out = this.ensureOpen('thinking', part.id);
        const signature = anthropicSignature(part.providerMetadata);
        if (signature !== undefined && this.open) this.open.signature = signature;
        if (part.type === 'reasoning-delta' && part.text !== '') {
          out.push(this.builder.appendThinking(this.openIndex(), part.text));
        }
        if (part.type === 'reasoning-end') out.push(...this.close());
        return out;
      }
      case 'tool-input-start':
        if (part.providerExecuted) return [];
        return this.ensureOpen('tool', part.id, part.toolName);
      case 'tool-input-delta':
        return this.isOpen('tool', part.id) && part.delta !== ''
          ? [this.builder.appendToolInput(this.openIndex(), part.delta)]
          : [];
      case 'tool-call': {
        if (part.providerExecuted || this.endedTools.has(part.toolCallId)) return [];
        const out: ModelStreamPart[] = [];
        if (!this.isOpen('tool', part.toolCallId)) {
          // A provider that sent the call whole, without streaming its input.
          out.push(...this.ensureOpen('tool', part.toolCallId, part.toolName));
          const json = typeof part.input === 'string' ? part.input : JSON.stringify(part.input ?? {});
          out.push(this.builder.appendToolInput(this.openIndex(), json));
        }
        // Invalid calls (input that is not JSON) keep the raw string: the caller reports it to the model.
        out.push(this.builder.endToolUse(this.openIndex(), part.input));
        this.endedTools.add(part.toolCallId);
        this.open = undefined;
        return out;
      }
      default:
        return [];
    }
  }

  /**
   * Ends the open block and gives the finish part. A reply with tool calls finishes with 'tool_use' even when
   * the provider said 'stop' (some OpenAI-compatible servers do).
   */
  finish(usage: Usage, reason: FinishReason, response?: ModelResponse): ModelStreamPart[] {
    const out = this.close();
    const finishReason = reason === 'stop' && this.builder.hasToolUse() ? 'tool_use' : reason;
    const part = this.builder.finish(usage, finishReason);
    out.push(response && (response.id || response.model) ? { ...part, response } : part);
    return out;
  }

  private isOpen(kind: Kind, id: string): boolean {
    return this.open?.kind === kind && this.open.id === id;
  }

  private openIndex(): number {
    if (!this.open) throw new Error('no block is open');
    return this.open.index;
  }

  private ensureOpen(kind: Kind, id: string, toolName = ''): ModelStreamPart[] {
    if (this.isOpen(kind, id)) return [];
    const out = this.close();
    const start =
      kind === 'text'
        ? this.builder.startText()
        : kind === 'thinking'
          ? this.builder.startThinking()
          : this.builder.startToolUse(id, toolName);
    this.open = { kind, id, index: start.index };
    out.push(start);
    return out;
  }

  private close(): ModelStreamPart[] {
    const open = this.open;
    if (!open) return [];
    this.open = undefined;
    if (open.kind === 'text') return [this.builder.endText(open.index)];
    if (open.kind === 'thinking') return [this.builder.endThinking(open.index, open.signature)];
    this.endedTools.add(open.id);
    return [this.builder.endToolUse(open.index)];
  }
}

function anthropicSignature(
  metadata: Record<string, Record<string, unknown>> | undefined,
): string | undefined {
  const signature = metadata?.anthropic?.signature;
  return typeof signature === 'string' && signature !== '' ? signature : undefined;
}
