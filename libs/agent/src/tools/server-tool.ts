// Server tools are registered in code: a name, a description, an input schema (zod, validated before the
// handler runs) and a handler. Sessions enable them by name (`opts.serverTools`). A tool marked `approval`
// pauses the run until someone decides.

import type { AttachmentBlock, TextBlock } from '@canopy/core';
import type { z } from 'zod';
import type { AgentTurn } from '../hooks/hook';

/**
 * What a tool handler gets (the turn's context): who acts (for an approved tool, its approver), the turn's context,
 * the call's id, a signal aborted when the run is cancelled or the tool times out, and `reportProgress`, which
 * emits `tool_progress` while this call is running (a no-op once it has finished).
 */
export interface ToolTurn extends AgentTurn {
  readonly toolCallId: string;
  /** The same as toolCallId (the tool use's id). */
  readonly toolUseId: string;
}

/** A handler returns text, blocks, any JSON value (sent as JSON text), or an explicit result. */
export type ToolOutput =
  | string
  | { content: string | Array<TextBlock | AttachmentBlock>; isError?: boolean }
  | Record<string, unknown>
  | unknown[]
  | number
  | boolean
  | null;

export interface ServerTool<I = unknown> {
  name: string;
  description: string;
  input: z.ZodType<I>;
  /** The JSON Schema the model sees, when it is not `input`'s (an MCP server's tool: the server validates). */
  inputSchema?: Record<string, unknown>;
  /** Pause for a decision (execute / reject / result) before running. */
  approval?: boolean;
  /** Overrides the default per-call timeout. */
  timeoutMs?: number;
  /** The MCP server whose tool this is (a tenant's MCP server's tool); absent for tools registered in code. */
  mcpServer?: string;
  handler(input: I, turn: ToolTurn): Promise<ToolOutput> | ToolOutput;
}

/** Keeps the input type of a tool definition while registering it. */
export function defineTool<I>(tool: ServerTool<I>): ServerTool<I> {
  return tool;
}
