// Runs server tool calls: the input is validated against the tool's schema first, calls run in parallel, each
// under its own timeout, and whatever goes wrong (invalid input, a throw, a rejection, a timeout) becomes an
// error result the model sees — never a failed run. Only a cancel of the run itself propagates. Each call is an
// `execute_tool` span (OpenTelemetry), its handler run inside it (an MCP call's request carries its traceparent).

import { context, trace } from '@opentelemetry/api';
import { z } from 'zod';
import type { SessionEventInput, ToolResultBlock, ToolUseBlock } from '@canopy/core';
import type { AgentTurn } from '../hooks/hook';
import type { ServerTool, ToolOutput, ToolTurn } from '../tools/server-tool';
import { endToolSpan, startToolSpan } from '../telemetry/tool-spans';

export interface ToolExecutionContext {
  /** The turn the call belongs to (its scope: who acts this call); its signal is the run's. */
  turn: AgentTurn;
  defaultTimeoutMs: number;
  emit(event: SessionEventInput): void;
}

export function errorResult(toolUseId: string, message: string): ToolResultBlock {
  return { type: 'tool_result', toolUseId, content: message, isError: true };
}

export async function executeServerTool(
  tool: ServerTool<unknown>,
  block: ToolUseBlock,
  ctx: ToolExecutionContext,
): Promise<ToolResultBlock> {
  const span = startToolSpan(block, tool.mcpServer ? 'mcp' : 'server', tool.mcpServer);
  try {
    const result = await context.with(trace.setSpan(context.active(), span), () =>
      runServerTool(tool, block, ctx),
    );
    endToolSpan(span, result, result.isError ? 'tool_error' : undefined);
    return result;
  } catch (err) {
    // The run was cancelled meanwhile.
    span.setAttribute('error.type', 'cancelled');
    span.end();
    throw err;
  }
}

async function runServerTool(
  tool: ServerTool<unknown>,
  block: ToolUseBlock,
  ctx: ToolExecutionContext,
): Promise<ToolResultBlock> {
  const parsed = tool.input.safeParse(block.input);
  if (!parsed.success) {
    return errorResult(block.id, `invalid tool arguments: ${z.prettifyError(parsed.error)}`);
  }
  const timeoutMs = tool.timeoutMs ?? ctx.defaultTimeoutMs;
  const runSignal = ctx.turn.signal;
  const runId = ctx.turn.runId;
  const controller = new AbortController();
  const onRunAbort = () => controller.abort(runSignal.reason);
  runSignal.addEventListener('abort', onRunAbort, { once: true });
  let running = true;
  const turn: ToolTurn = {
    ...ctx.turn,
    assistantMessage: null,
    toolCallId: block.id,
    toolUseId: block.id,
    signal: controller.signal,
    reportProgress: (payload) => {
      if (running && !controller.signal.aborted) {
        ctx.emit({ type: 'tool_progress', data: { runId, toolUseId: block.id, payload } });
      }
    },
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    const output = await Promise.race([
      Promise.resolve().then(() => tool.handler(parsed.data, turn)),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ToolTimeout(timeoutMs)), timeoutMs);
      }),
      new Promise<never>((_, reject) => {
        if (runSignal.aborted) reject(runSignal.reason as Error);
        runSignal.addEventListener('abort', () => reject(runSignal.reason as Error), { once: true });
      }),
    ]);
    return toResult(block.id, output);
  } catch (err) {
    if (runSignal.aborted) throw runSignal.reason as Error;
    if (err instanceof ToolTimeout) {
      controller.abort(err);
      return errorResult(block.id, `tool ${tool.name} timed out after ${timeoutMs} ms`);
    }
    return errorResult(
      block.id,
      `tool ${tool.name} failed: ${err instanceof Error ? err.message : String(err)}`,
    );
  } finally {
    running = false;
    clearTimeout(timer);
    runSignal.removeEventListener('abort', onRunAbort);
  }
}

class ToolTimeout extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
  }
}

/** Normalises what a handler returned into a tool result. */
export function toResult(toolUseId: string, output: ToolOutput | undefined): ToolResultBlock {
  if (typeof output === 'string') return { type: 'tool_result', toolUseId, content: output, isError: false };
  if (output && typeof output === 'object' && !Array.isArray(output) && 'content' in output) {
    const explicit = output as { content: unknown; isError?: unknown };
    if (typeof explicit.content === 'string' || Array.isArray(explicit.content)) {
      return {
        type: 'tool_result',
        toolUseId,
        content: explicit.content as ToolResultBlock['content'],
        isError: explicit.isError === true,
      };
    }
  }
  return { type: 'tool_result', toolUseId, content: JSON.stringify(output ?? null), isError: false };
}
