// The AI SDK's UI message stream, translated from one run's Canopy events: `start`, then per model call
// `start-step` … `finish-step` with its `text-*`, `reasoning-*` and `tool-input-*` parts, `tool-output-*` as tool
// results arrive, `tool-approval-request` when the run pauses for an approval, `data-tool-progress` (and a transient
// `data-retry`) for Canopy's own events, and one end: `finish` (the run stopped or paused), `abort` (cancelled) or
// `error`. The message is the run's: its id is the run id, so a resumed stream, which replays the run from its start
// (`replay`), replaces the message a client already has instead of adding one. Pure: no I/O.

import type { FinishReason, UIMessageChunk } from 'ai';
import {
  isToolResultMessage,
  toolResultText,
  type AssistantBlock,
  type ClientTool,
  type InFlight,
  type Message,
  type SessionEvent,
  type ToolResultBlock,
  type ToolUseBlock,
} from '@canopy/core';

/** The metadata of an assistant message: the node it starts and the versions of its turn (GET …/messages too). */
export interface UiMessageMetadata {
  nodeId: number | null;
  versions: number[];
  versionIndex: number;
}

export type UiChunk = UIMessageChunk<UiMessageMetadata>;

/** How the translated run ended, once it has. */
export type UiStreamEnd = 'finish' | 'abort' | 'error';

const FINISH_REASONS: Record<string, FinishReason> = {
  stop: 'stop',
  tool_use: 'tool-calls',
  length: 'length',
  content_filter: 'content-filter',
  error: 'error',
  other: 'other',
};

export class UiMessageChunks {
  /** Model calls completed so far (each is a step; part ids carry it). */
  private step = 0;
  private stepOpen = false;
  /** Text and reasoning parts started and not ended yet, by part id. */
  private readonly open = new Map<string, 'text' | 'reasoning'>();
  private readonly toolInputs = new Map<string, string>();
  private readonly outputsSent = new Set<string>();
  private finishReason: FinishReason = 'stop';
  /** The run stopped; its `finish` waits for the commit that follows (finish()). */
  finishing = false;
  ended: UiStreamEnd | null = null;

  constructor(
    private readonly runId: string,
    /** The session's client tools: a paused call of one (without approval) waits for the client's output. */
    private readonly clientTools: readonly ClientTool[],
  ) {}

  start(): UiChunk[] {
    return [{ type: 'start', messageId: this.runId }];
  }

  /**
   * What the run did before `inFlight` was taken, as a stream from its start would have said it: its completed
   * steps, its tool results, the step being streamed so far and, when it is paused, what it waits for.
   */
  replay(inFlight: InFlight, paused: boolean): UiChunk[] {
    const out: UiChunk[] = [];
    for (const message of inFlight.pending) out.push(...this.replayMessage(message));
    if (inFlight.partial) {
      out.push(...this.openStep());
      inFlight.partial.content.forEach((block, index) => {
        if (block.type === 'text' || block.type === 'thinking') {
          const kind = block.type === 'text' ? 'text' : 'reasoning';
          out.push(...this.startPart(kind, index));
          if (block.text) out.push(this.delta(kind, index, block.text));
        } else if (block.type === 'tool_use') {
          out.push(this.toolInputStart(block.id, block.name));
        }
      });
    }
    if (paused) out.push(...this.pause(inFlight.awaiting), ...this.end('finish'));
    return out;
  }

  /** The chunks one event of the run (or of its session) translates to. */
  map(event: SessionEvent): UiChunk[] {
    switch (event.type) {
      case 'text_start':
        return [...this.openStep(), ...this.startPart('text', event.data.index)];
      case 'text_delta':
        return [
          ...this.openStep(),
          ...this.ensurePart('text', event.data.index),
          this.delta('text', event.data.index, event.data.delta),
        ];
      case 'text_end':
        return this.endPart(this.partId('text', event.data.index));
      case 'thinking_start':
        return [...this.openStep(), ...this.startPart('reasoning', event.data.index)];
      case 'thinking_delta':
        return [
          ...this.openStep(),
          ...this.ensurePart('reasoning', event.data.index),
          this.delta('reasoning', event.data.index, event.data.delta),
        ];
      case 'thinking_end':
        return this.endPart(this.partId('reasoning', event.data.index));
      case 'tool_use_start':
        return [...this.openStep(), this.toolInputStart(event.data.id, event.data.name)];
      case 'tool_use_delta':
        if (!this.toolInputs.has(event.data.id)) return [];
        return [{ type: 'tool-input-delta', toolCallId: event.data.id, inputTextDelta: event.data.delta }];
      case 'tool_use_end':
        return [...this.openStep(), this.toolInput(event.data.block)];
      case 'tool_result':
        return this.toolOutput(event.data.result);
      case 'message':
        // Tool results a client supplied (or any the run had not announced) arrive in the run's messages.
        return isToolResultMessage(event.data.message) ? this.replayMessage(event.data.message) : [];
      case 'tool_progress':
        return [
          {
            type: 'data-tool-progress',
            id: event.data.toolUseId,
            data: { toolCallId: event.data.toolUseId, payload: event.data.payload },
          },
        ];
      case 'retry':
        return [
          {
            type: 'data-retry',
            data: { attempt: event.data.attempt, delayMs: event.data.delayMs, error: event.data.error },
            transient: true,
          },
        ];
      case 'step':
        this.finishReason = FINISH_REASONS[event.data.finishReason] ?? 'other';
        return this.closeStep();
      case 'pause':
        return [...this.closeStep(), ...this.pause(event.data.toolUses), ...this.end('finish')];
      case 'turn':
        if (event.data.stop === 'stop') this.finishing = true;
        return [];
      case 'cancelled':
        return this.end('abort');
      case 'error':
        return this.end('error', `${event.data.code}: ${event.data.message}`);
      default:
        return [];
    }
  }

  /** The run's `finish`, once its turn is committed (with where it is in the tree) or known not to be. */
  finish(metadata: UiMessageMetadata | null): UiChunk[] {
    return [...this.closeStep(), ...this.end('finish', undefined, metadata)];
  }

  private replayMessage(message: Message): UiChunk[] {
    if (message.role === 'assistant') {
      const out = this.openStep();
      message.content.forEach((block, index) => out.push(...this.wholeBlock(block as AssistantBlock, index)));
      out.push(...this.closeStep());
      return out;
    }
    if (!isToolResultMessage(message)) return []; // the prompt: the client has it
    return message.content.flatMap((block) => (block.type === 'tool_result' ? this.toolOutput(block) : []));
  }

  private wholeBlock(block: AssistantBlock, index: number): UiChunk[] {
    if (block.type === 'tool_use') return [this.toolInput(block)];
    const kind = block.type === 'text' ? 'text' : 'reasoning';
    if (block.type !== 'text' && block.type !== 'thinking') return [];
    return [
      ...this.startPart(kind, index),
      ...(block.text ? [this.delta(kind, index, block.text)] : []),
      ...this.endPart(this.partId(kind, index)),
    ];
  }

  private pause(toolUses: readonly ToolUseBlock[]): UiChunk[] {
    // A client tool the client executes without asking: its tool-input-available is the request. Anything else
    // awaits an approval.
    return toolUses
      .filter((use) => !this.clientTools.some((t) => t.name === use.name && t.approval !== true))
      .map((use) => ({ type: 'tool-approval-request', approvalId: use.id, toolCallId: use.id }) as const);
  }

  private end(how: UiStreamEnd, errorText?: string, metadata?: UiMessageMetadata | null): UiChunk[] {
    if (this.ended) return [];
    this.ended = how;
    if (how === 'abort') return [{ type: 'abort', reason: 'cancelled' }];
    if (how === 'error') return [{ type: 'error', errorText: errorText ?? 'the run failed' }];
    const paused = !this.finishing;
    return [
      {
        type: 'finish',
        finishReason: paused ? 'tool-calls' : this.finishReason,
        ...(metadata ? { messageMetadata: metadata } : {}),
      },
    ];
  }

  private openStep(): UiChunk[] {
    if (this.stepOpen) return [];
    this.stepOpen = true;
    return [{ type: 'start-step' }];
  }

  private closeStep(): UiChunk[] {
    if (!this.stepOpen) return [];
    const out: UiChunk[] = [];
    for (const id of [...this.open.keys()]) out.push(...this.endPart(id));
    this.stepOpen = false;
    this.step++;
    out.push({ type: 'finish-step' });
    return out;
  }

  private partId(kind: 'text' | 'reasoning', index: number): string {
    return `${kind}-${this.step}-${index}`;
  }

  private startPart(kind: 'text' | 'reasoning', index: number): UiChunk[] {
    const id = this.partId(kind, index);
    if (this.open.has(id)) return [];
    this.open.set(id, kind);
    return [{ type: kind === 'text' ? 'text-start' : 'reasoning-start', id }];
  }

  /** A delta of a part this stream has not started (a block whose start came before a replay): started first. */
  private ensurePart(kind: 'text' | 'reasoning', index: number): UiChunk[] {
    return this.open.has(this.partId(kind, index)) ? [] : this.startPart(kind, index);
  }

  private delta(kind: 'text' | 'reasoning', index: number, delta: string): UiChunk {
    const id = this.partId(kind, index);
    return { type: kind === 'text' ? 'text-delta' : 'reasoning-delta', id, delta };
  }

  private endPart(id: string): UiChunk[] {
    const kind = this.open.get(id);
    if (!kind) return [];
    this.open.delete(id);
    return [{ type: kind === 'text' ? 'text-end' : 'reasoning-end', id }];
  }

  private toolInputStart(toolCallId: string, toolName: string): UiChunk {
    this.toolInputs.set(toolCallId, toolName);
    return { type: 'tool-input-start', toolCallId, toolName };
  }

  private toolInput(block: ToolUseBlock): UiChunk {
    this.toolInputs.set(block.id, block.name);
    return { type: 'tool-input-available', toolCallId: block.id, toolName: block.name, input: block.input };
  }

  private toolOutput(result: ToolResultBlock): UiChunk[] {
    if (this.outputsSent.has(result.toolUseId)) return [];
    this.outputsSent.add(result.toolUseId);
    if (result.isError) {
      return [{ type: 'tool-output-error', toolCallId: result.toolUseId, errorText: toolResultText(result) }];
    }
    return [{ type: 'tool-output-available', toolCallId: result.toolUseId, output: toolOutputOf(result) }];
  }
}

/** A tool result's output as a UI message carries it: its text, parsed when it is JSON. */
export function toolOutputOf(result: ToolResultBlock): unknown {
  const text = toolResultText(result);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
