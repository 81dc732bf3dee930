// AG-UI events, translated from one run's Canopy events: per model call STEP_STARTED … STEP_FINISHED with its
// TEXT_MESSAGE_*, REASONING_* and TOOL_CALL_* events, TOOL_CALL_RESULT as results arrive, CUSTOM events for
// Canopy's own (`canopy.tool_progress`, `canopy.retry`), and how the run ended: stopped (its RUN_FINISHED follows
// its commit), paused (an interrupt per approval, the client tools' calls left pending), cancelled, or failed
// (RUN_ERROR). Messages streamed before the commit carry ids of the run (`<runId>.<step>.<index>`); the
// MESSAGES_SNAPSHOT sent after it gives them their node ids. Pure: no I/O.

import { CanopyException } from '@canopy/common';
import {
  EventType,
  type BaseEvent,
  type InputContent,
  type Interrupt,
  type Message as AgUiMessage,
  type RunFinishedOutcome,
} from '@ag-ui/core';
import {
  isToolResultMessage,
  isTurnBoundary,
  joinText,
  toolResultText,
  type Block,
  type ClientTool,
  type Message,
  type SessionEvent,
  type ToolResultBlock,
  type ToolUseBlock,
  type Tree,
} from '@canopy/core';

export type AgUiEnd =
  | { type: 'success' }
  | { type: 'interrupt'; interrupts: Interrupt[]; pendingToolCallIds: string[] }
  | { type: 'cancelled' }
  | { type: 'error' };

export class AgUiEvents {
  private step = 0;
  private stepOpen = false;
  private readonly openText = new Set<string>();
  private readonly openReasoning = new Set<string>();
  private readonly openTools = new Set<string>();
  private readonly argsSent = new Set<string>();
  private readonly resultsSent = new Set<string>();
  /** The run stopped; RUN_FINISHED waits for its commit. */
  finishing = false;
  ended: AgUiEnd | null = null;

  constructor(
    private readonly runId: string,
    private readonly clientTools: readonly ClientTool[],
  ) {}

  map(event: SessionEvent): BaseEvent[] {
    switch (event.type) {
      case 'text_start': {
        const messageId = this.partId(event.data.index);
        if (this.openText.has(messageId)) return [];
        this.openText.add(messageId);
        return [...this.openStep(), { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' }];
      }
      case 'text_delta': {
        const messageId = this.partId(event.data.index);
        const start = this.openText.has(messageId)
          ? []
          : this.map({
              ...event,
              type: 'text_start',
              data: { runId: event.data.runId, index: event.data.index },
            });
        if (event.data.delta === '') return start;
        return [...start, { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: event.data.delta }];
      }
      case 'text_end':
        return this.endText(this.partId(event.data.index));
      case 'thinking_start': {
        const messageId = `${this.partId(event.data.index)}.reasoning`;
        if (this.openReasoning.has(messageId)) return [];
        this.openReasoning.add(messageId);
        return [
          ...this.openStep(),
          { type: EventType.REASONING_START, messageId },
          { type: EventType.REASONING_MESSAGE_START, messageId, role: 'reasoning' },
        ];
      }
      case 'thinking_delta': {
        const messageId = `${this.partId(event.data.index)}.reasoning`;
        const start = this.openReasoning.has(messageId)
          ? []
          : this.map({
              ...event,
              type: 'thinking_start',
              data: { runId: event.data.runId, index: event.data.index },
            });
        if (event.data.delta === '') return start;
        return [...start, { type: EventType.REASONING_MESSAGE_CONTENT, messageId, delta: event.data.delta }];
      }
      case 'thinking_end':
        return this.endReasoning(`${this.partId(event.data.index)}.reasoning`);
      case 'tool_use_start':
        return [...this.openStep(), ...this.startTool(event.data.id, event.data.name)];
      case 'tool_use_delta':
        if (!this.openTools.has(event.data.id) || event.data.delta === '') return [];
        this.argsSent.add(event.data.id);
        return [{ type: EventType.TOOL_CALL_ARGS, toolCallId: event.data.id, delta: event.data.delta }];
      case 'tool_use_end':
        return [...this.openStep(), ...this.wholeTool(event.data.block)];
      case 'tool_result':
        return this.result(event.data.result);
      case 'message':
        if (!isToolResultMessage(event.data.message)) return [];
        return event.data.message.content.flatMap((b) => (b.type === 'tool_result' ? this.result(b) : []));
      case 'tool_progress':
        return [
          {
            type: EventType.CUSTOM,
            name: 'canopy.tool_progress',
            value: { toolCallId: event.data.toolUseId, payload: event.data.payload },
          },
        ];
      case 'retry':
        return [
          {
            type: EventType.CUSTOM,
            name: 'canopy.retry',
            value: { attempt: event.data.attempt, delayMs: event.data.delayMs, error: event.data.error },
          },
        ];
      case 'step':
        return this.closeStep();
      case 'pause': {
        const out = this.closeStep();
        const byClient = (use: ToolUseBlock) =>
          this.clientTools.some((t) => t.name === use.name && t.approval !== true);
        const interrupts: Interrupt[] = event.data.toolUses
          .filter((use) => !byClient(use))
          .map((use) => ({
            id: use.id,
            reason: 'tool_approval',
            toolCallId: use.id,
            message: `approve the call of ${use.name}`,
            responseSchema: {
              type: 'object',
              properties: { approved: { type: 'boolean' }, reason: { type: 'string' } },
              required: ['approved'],
            },
          }));
        const pendingToolCallIds = event.data.toolUses.filter(byClient).map((u) => u.id);
        this.ended = { type: 'interrupt', interrupts, pendingToolCallIds };
        return out;
      }
      case 'turn':
        if (event.data.stop === 'stop') this.finishing = true;
        return [];
      case 'cancelled':
        this.ended = { type: 'cancelled' };
        return this.closeStep();
      case 'error':
        this.ended = { type: 'error' };
        return [
          ...this.closeStep(),
          { type: EventType.RUN_ERROR, message: event.data.message, code: event.data.code },
        ];
      default:
        return [];
    }
  }

  /** The run stopped and its commit is in (or failed): nothing is left open. */
  finish(): BaseEvent[] {
    this.ended ??= { type: 'success' };
    return this.closeStep();
  }

  /** RUN_FINISHED for how the run ended (null after RUN_ERROR, which ends the run itself). */
  runFinished(threadId: string, runId: string): BaseEvent | null {
    const end = this.ended ?? { type: 'success' };
    if (end.type === 'error') return null;
    let outcome: RunFinishedOutcome | undefined;
    if (end.type === 'cancelled') outcome = { type: 'cancelled' };
    else if (end.type === 'interrupt' && end.interrupts.length > 0)
      outcome = { type: 'interrupt', interrupts: end.interrupts };
    else if (end.type === 'interrupt')
      outcome = { type: 'success', pendingToolCallIds: end.pendingToolCallIds };
    return {
      type: EventType.RUN_FINISHED,
      threadId,
      runId,
      ...(outcome ? { outcome } : {}),
      metadata: { canopyRunId: this.runId },
    };
  }

  private partId(index: number): string {
    return `${this.runId}.${this.step}.${index}`;
  }

  private openStep(): BaseEvent[] {
    if (this.stepOpen) return [];
    this.stepOpen = true;
    return [{ type: EventType.STEP_STARTED, stepName: `model call ${this.step + 1}` }];
  }

  private closeStep(): BaseEvent[] {
    const out: BaseEvent[] = [];
    for (const id of [...this.openText]) out.push(...this.endText(id));
    for (const id of [...this.openReasoning]) out.push(...this.endReasoning(id));
    for (const id of [...this.openTools]) out.push({ type: EventType.TOOL_CALL_END, toolCallId: id });
    this.openTools.clear();
    if (this.stepOpen) {
      out.push({ type: EventType.STEP_FINISHED, stepName: `model call ${this.step + 1}` });
      this.stepOpen = false;
      this.step++;
    }
    return out;
  }

  private endText(messageId: string): BaseEvent[] {
    if (!this.openText.delete(messageId)) return [];
    return [{ type: EventType.TEXT_MESSAGE_END, messageId }];
  }

  private endReasoning(messageId: string): BaseEvent[] {
    if (!this.openReasoning.delete(messageId)) return [];
    return [
      { type: EventType.REASONING_MESSAGE_END, messageId },
      { type: EventType.REASONING_END, messageId },
    ];
  }

  private startTool(toolCallId: string, toolCallName: string): BaseEvent[] {
    if (this.openTools.has(toolCallId)) return [];
    this.openTools.add(toolCallId);
    return [
      {
        type: EventType.TOOL_CALL_START,
        toolCallId,
        toolCallName,
        parentMessageId: `${this.runId}.${this.step}`,
      },
    ];
  }

  private wholeTool(block: ToolUseBlock): BaseEvent[] {
    const out = this.startTool(block.id, block.name);
    if (!this.argsSent.has(block.id)) {
      this.argsSent.add(block.id);
      out.push({
        type: EventType.TOOL_CALL_ARGS,
        toolCallId: block.id,
        delta: JSON.stringify(block.input ?? {}),
      });
    }
    this.openTools.delete(block.id);
    out.push({ type: EventType.TOOL_CALL_END, toolCallId: block.id });
    return out;
  }

  private result(block: ToolResultBlock): BaseEvent[] {
    if (this.resultsSent.has(block.toolUseId)) return [];
    this.resultsSent.add(block.toolUseId);
    return [
      {
        type: EventType.TOOL_CALL_RESULT,
        messageId: `${this.runId}.result.${block.toolUseId}`,
        toolCallId: block.toolUseId,
        content: toolResultText(block),
        role: 'tool',
      },
    ];
  }
}

/**
 * A conversation as AG-UI messages: the active path (ids: the node ids; an assistant node's reasoning is
 * `<node>.reasoning`, a tool result `<node>.<toolCallId>`), then what a run in flight has not committed (ids of the
 * run), then messages the client sent that are not committed yet.
 */
export function agUiMessagesOf(
  tree: Tree,
  pending: ReadonlyArray<{ id: string; message: Message }> = [],
  extra: readonly AgUiMessage[] = [],
): AgUiMessage[] {
  const out: AgUiMessage[] = [];
  for (const node of tree) out.push(...agUiMessagesOfOne(String(node.id), node.message));
  for (const p of pending) out.push(...agUiMessagesOfOne(p.id, p.message));
  out.push(...extra);
  return out;
}

/**
 * A user message's AG-UI content as Canopy blocks: text parts, and image and document parts whose source is inline
 * data or a URL (with its field, for the SSRF guard). A file-handle source is not something Canopy can read: 400.
 */
export function blocksOf(
  content: unknown,
  field: string,
): { blocks: Block[]; urls: Array<{ url: string; field: string }> } {
  if (typeof content === 'string')
    return { blocks: content ? [{ type: 'text', text: content }] : [], urls: [] };
  const blocks: Block[] = [];
  const urls: Array<{ url: string; field: string }> = [];
  (Array.isArray(content) ? content : []).forEach((part: unknown, j) => {
    const p = (part ?? {}) as { type?: unknown; text?: unknown; source?: Record<string, unknown> };
    if (p.type === 'text' && typeof p.text === 'string' && p.text !== '') {
      blocks.push({ type: 'text', text: p.text });
      return;
    }
    if ((p.type !== 'image' && p.type !== 'document') || !p.source) return;
    const { type, value, mimeType } = p.source as { type?: unknown; value?: unknown; mimeType?: unknown };
    const mediaType = typeof mimeType === 'string' && mimeType ? mimeType : null;
    if (type === 'data' && typeof value === 'string' && mediaType) {
      blocks.push({ type: 'attachment', mediaType, data: value });
    } else if (type === 'file' && typeof value === 'string' && mediaType) {
      // A file stored in Canopy (POST /v1/files), by its id.
      blocks.push({ type: 'attachment', mediaType, fileId: value });
    } else if (type === 'url' && typeof value === 'string' && mediaType) {
      blocks.push({ type: 'attachment', mediaType, url: value });
      urls.push({ url: value, field: `${field}.${j}.source.value` });
    } else {
      throw CanopyException.badRequest(
        'an image or document part needs inline data, a URL or a Canopy file id, with its mimeType',
        { field: `${field}.${j}.source` },
      );
    }
  });
  return { blocks, urls };
}

function agUiMessagesOfOne(id: string, message: Message): AgUiMessage[] {
  if (isTurnBoundary(message)) {
    const attachments = message.content.filter((b) => b.type === 'attachment');
    if (attachments.length === 0) return [{ id, role: 'user', content: joinText(message.content) }];
    return [
      {
        id,
        role: 'user',
        content: message.content.flatMap((b): InputContent[] => {
          if (b.type === 'text') return [{ type: 'text' as const, text: b.text }];
          if (b.type !== 'attachment') return [];
          const source =
            b.fileId !== undefined
              ? { type: 'file' as const, value: b.fileId, provider: 'canopy', mimeType: b.mediaType }
              : b.url !== undefined
                ? { type: 'url' as const, value: b.url, mimeType: b.mediaType }
                : { type: 'data' as const, value: b.data ?? '', mimeType: b.mediaType };
          return [
            { type: b.mediaType.startsWith('image/') ? ('image' as const) : ('document' as const), source },
          ];
        }),
      },
    ];
  }
  if (message.role === 'assistant') {
    const out: AgUiMessage[] = [];
    const reasoning = message.content
      .filter((b) => b.type === 'thinking')
      .map((b) => b.text)
      .join('\n\n');
    if (reasoning) out.push({ id: `${id}.reasoning`, role: 'reasoning', content: reasoning });
    const text = joinText(message.content);
    const toolCalls = message.content
      .filter((b) => b.type === 'tool_use')
      .map((b) => ({
        id: b.id,
        type: 'function' as const,
        function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) },
      }));
    out.push({
      id,
      role: 'assistant',
      ...(text ? { content: text } : {}),
      ...(toolCalls.length > 0 ? { toolCalls } : {}),
    });
    return out;
  }
  return message.content.flatMap((b): AgUiMessage[] =>
    b.type === 'tool_result'
      ? [
          {
            id: `${id}.${b.toolUseId}`,
            role: 'tool',
            toolCallId: b.toolUseId,
            content: toolResultText(b),
            ...(b.isError ? { error: toolResultText(b) } : {}),
          },
        ]
      : [],
  );
}
