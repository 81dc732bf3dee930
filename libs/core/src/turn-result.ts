// The result of one agent run as a flat list of items (droid-sdk's TurnResult): messages, tool calls
// and tool results in order, calls and results correlated by `toolId` (the tool-use id). What `wait: true`
// answers and what the SDK's `session.run()` returns; `toJsonResult()` is the snake_case `format: "json"` form.

import {
  isToolResultBlock,
  isToolUseBlock,
  joinText,
  toolResultText,
  type Message,
  type Role,
} from './message';
import type { NodeId } from './tree';
import type { RunError } from './events';

export interface MessageItem {
  type: 'message';
  role: Role;
  id: string;
  text: string;
  timestamp: number;
}

export interface ToolCallItem {
  type: 'tool_call';
  id: string;
  messageId: string;
  toolId: string;
  toolName: string;
  parameters: Record<string, unknown>;
  timestamp: number;
}

export interface ToolResultItem {
  type: 'tool_result';
  id: string;
  messageId: string;
  toolId: string;
  toolName: string;
  isError: boolean;
  value: string;
  timestamp: number;
}

export type AnyTurnItem = MessageItem | ToolCallItem | ToolResultItem;

/**
 * How the run stopped: it completed, paused for decisions (`awaiting` holds the tool calls waiting), was
 * cancelled, failed, or completed because it reached its step cap (`max_steps`).
 */
export type RunResultStatus = 'completed' | 'paused' | 'cancelled' | 'error' | 'max_steps';

export const RUN_RESULT_STATUSES = ['completed', 'paused', 'cancelled', 'error', 'max_steps'] as const;

export interface TurnResultData {
  sessionId: string;
  finalResponse: string;
  items: AnyTurnItem[];
  durationMs: number;
  numTurns: number;
  isError: boolean;
  /** The run this result is of. */
  runId: string;
  status: RunResultStatus;
  /** The tool calls waiting for a decision (`resume`) when the run paused; empty otherwise. */
  awaiting: ToolCallItem[];
  /** A failed run's error: its code (e.g. `context_length_exceeded`), message and figures. */
  error?: RunError;
}

/** A tool call waiting for a decision, in the JSON result's snake_case. */
export interface JsonAwaitingCall {
  tool_id: string;
  tool_name: string;
  parameters: Record<string, unknown>;
}

export interface JsonResult {
  session_id: string;
  is_error: boolean;
  duration_ms: number;
  num_turns: number;
  result: string;
  run_id: string;
  status: RunResultStatus;
  awaiting: JsonAwaitingCall[];
  error?: RunError;
}

/** A message of a run, with its tree node id once committed (a cancelled run's messages have none). */
export interface RunMessage {
  nodeId?: NodeId | null;
  message: Message;
}

export interface TurnResultInput {
  sessionId: string;
  runId: string;
  status: RunResultStatus;
  messages: readonly RunMessage[];
  durationMs: number;
  /** The failed run's error: the final response of an `error` result is its message (a string: the message alone). */
  error?: RunError | string | null;
  /** Ids of the tool uses a paused run waits for. */
  awaiting?: readonly string[];
}

/** The final response is not JSON (parse). */
export class TurnResultParseError extends Error {
  readonly code = 'parse_error';
  constructor(
    readonly text: string,
    cause: unknown,
  ) {
    super('the final response is not valid JSON', { cause });
    this.name = 'TurnResultParseError';
  }
}

/**
 * Items of a run's messages. Ids: a message is `msg_<node id>`, the tree node it has or will have once its run
 * commits (so the id stays the same across a pause and resume; a message whose node is unknown is
 * `msg_p<position>`); a tool call `call_<tool-use id>` and its result `result_<tool-use id>`.
 */
export function turnItems(messages: readonly RunMessage[]): AnyTurnItem[] {
  const items: AnyTurnItem[] = [];
  const toolNames = new Map<string, string>();
  messages.forEach(({ nodeId, message }, position) => {
    const messageId = nodeId != null ? `msg_${nodeId}` : `msg_p${position}`;
    const text = joinText(message.content);
    const onlyToolResults = message.role === 'user' && message.content.every(isToolResultBlock);
    if (!onlyToolResults || text !== '') {
      items.push({ type: 'message', role: message.role, id: messageId, text, timestamp: message.timestamp });
    }
    for (const block of message.content) {
      if (isToolUseBlock(block)) {
        toolNames.set(block.id, block.name);
        items.push({
          type: 'tool_call',
          id: `call_${block.id}`,
          messageId,
          toolId: block.id,
          toolName: block.name,
          parameters: isRecord(block.input) ? block.input : { value: block.input },
          timestamp: message.timestamp,
        });
      } else if (isToolResultBlock(block)) {
        items.push({
          type: 'tool_result',
          id: `result_${block.toolUseId}`,
          messageId,
          toolId: block.toolUseId,
          toolName: toolNames.get(block.toolUseId) ?? '',
          isError: block.isError,
          value: toolResultText(block),
          timestamp: message.timestamp,
        });
      }
    }
  });
  return items;
}

export class TurnResult implements TurnResultData {
  readonly sessionId: string;
  readonly finalResponse: string;
  readonly items: AnyTurnItem[];
  readonly durationMs: number;
  readonly numTurns: number;
  readonly isError: boolean;
  readonly runId: string;
  readonly status: RunResultStatus;
  readonly awaiting: ToolCallItem[];
  readonly error?: RunError;

  constructor(data: TurnResultData) {
    this.sessionId = data.sessionId;
    this.finalResponse = data.finalResponse;
    this.items = data.items;
    this.durationMs = data.durationMs;
    this.numTurns = data.numTurns;
    this.isError = data.isError;
    this.runId = data.runId;
    this.status = data.status;
    this.awaiting = data.awaiting ?? [];
    if (data.error) this.error = data.error;
  }

  /**
   * A run's result from its messages: the final response is the text of the last assistant message that has
   * text — for a paused run the text before its tool calls, for a cancelled one the partial text it streamed —
   * or the error of a failed run. isError is true for a failed or cancelled run. numTurns counts model steps
   * (assistant messages).
   */
  static fromMessages(input: TurnResultInput): TurnResult {
    const assistants = input.messages.filter((m) => m.message.role === 'assistant');
    const lastWithText = [...assistants].reverse().find((m) => joinText(m.message.content) !== '');
    const failed = input.status === 'error';
    const items = turnItems(input.messages);
    const awaiting = new Set(input.status === 'paused' ? (input.awaiting ?? []) : []);
    const error: RunError | null =
      typeof input.error === 'string' ? { code: 'internal', message: input.error } : (input.error ?? null);
    return new TurnResult({
      sessionId: input.sessionId,
      finalResponse: failed
        ? (error?.message ?? 'the run failed')
        : lastWithText
          ? joinText(lastWithText.message.content)
          : '',
      items,
      durationMs: input.durationMs,
      numTurns: assistants.length,
      isError: failed || input.status === 'cancelled',
      runId: input.runId,
      status: input.status,
      awaiting: items.filter((i): i is ToolCallItem => i.type === 'tool_call' && awaiting.has(i.toolId)),
      ...(failed && error && typeof input.error !== 'string' ? { error } : {}),
    });
  }

  static fromJsonResult(json: JsonResult): TurnResult {
    return new TurnResult({
      sessionId: json.session_id,
      finalResponse: json.result,
      items: [],
      durationMs: json.duration_ms,
      numTurns: json.num_turns,
      isError: json.is_error,
      runId: json.run_id,
      status: json.status,
      awaiting: (json.awaiting ?? []).map((a) => ({
        type: 'tool_call',
        id: `call_${a.tool_id}`,
        messageId: '',
        toolId: a.tool_id,
        toolName: a.tool_name,
        parameters: a.parameters,
        timestamp: 0,
      })),
      ...(json.error ? { error: json.error } : {}),
    });
  }

  get messages(): MessageItem[] {
    return this.items.filter((i): i is MessageItem => i.type === 'message');
  }

  get assistantMessages(): MessageItem[] {
    return this.messages.filter((m) => m.role === 'assistant');
  }

  get toolCalls(): ToolCallItem[] {
    return this.items.filter((i): i is ToolCallItem => i.type === 'tool_call');
  }

  get toolResults(): ToolResultItem[] {
    return this.items.filter((i): i is ToolResultItem => i.type === 'tool_result');
  }

  /**
   * The final response parsed as JSON (a ```json fence around it is allowed) and checked by the schema (any
   * object with `parse`, e.g. zod). Throws TurnResultParseError for text that is not JSON, and whatever the
   * schema throws for JSON of the wrong shape.
   */
  parse<T>(schema: { parse(data: unknown): T }): T {
    return schema.parse(parseJsonText(this.finalResponse));
  }

  /** Like parse, but null when the response is not JSON or does not fit the schema (any `safeParse`). */
  tryParse<T>(schema: { safeParse(data: unknown): { success: boolean; data?: T } }): T | null {
    let data: unknown;
    try {
      data = parseJsonText(this.finalResponse);
    } catch {
      return null;
    }
    const result = schema.safeParse(data);
    return result.success ? (result.data ?? null) : null;
  }

  toJSON(): TurnResultData {
    return {
      sessionId: this.sessionId,
      finalResponse: this.finalResponse,
      items: this.items,
      durationMs: this.durationMs,
      numTurns: this.numTurns,
      isError: this.isError,
      runId: this.runId,
      status: this.status,
      awaiting: this.awaiting,
      ...(this.error ? { error: this.error } : {}),
    };
  }

  toJsonResult(): JsonResult {
    return {
      session_id: this.sessionId,
      is_error: this.isError,
      duration_ms: this.durationMs,
      num_turns: this.numTurns,
      result: this.finalResponse,
      run_id: this.runId,
      status: this.status,
      awaiting: this.awaiting.map((a) => ({
        tool_id: a.toolId,
        tool_name: a.toolName,
        parameters: a.parameters,
      })),
      ...(this.error ? { error: this.error } : {}),
    };
  }
}

const FENCE = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/;

function parseJsonText(text: string): unknown {
  const trimmed = text.trim();
  const body = FENCE.exec(trimmed)?.[1] ?? trimmed;
  try {
    return JSON.parse(body);
  } catch (err) {
    throw new TurnResultParseError(text, err);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
