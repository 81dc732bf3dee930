// `execute_tool {tool}` spans (GenAI conventions): one per tool call of a run, whether a server tool ran here, an
// MCP server's tool was called, or a client tool's result came back with a decision. Arguments and results are
// recorded only when the operator opted into message content.

import { SpanStatusCode, type Span } from '@opentelemetry/api';
import { CANOPY_ATTR, GEN_AI, SPAN, canopyTracer, telemetryOptions } from '@canopy/common';
import type { ToolResultBlock, ToolUseBlock } from '@canopy/core';
import { resultText } from './gen-ai-content';

export type ToolSpanKind = 'server' | 'client' | 'mcp';

/** Starts the span of a tool call (in the active context: the run's). */
export function startToolSpan(block: ToolUseBlock, kind: ToolSpanKind, mcpServer?: string): Span {
  const span = canopyTracer().startSpan(`${SPAN.executeTool} ${block.name}`, {
    attributes: {
      [GEN_AI.operationName]: 'execute_tool',
      [GEN_AI.toolName]: block.name,
      [GEN_AI.toolCallId]: block.id,
      [GEN_AI.toolType]: kind === 'client' ? 'extension' : 'function',
      [CANOPY_ATTR.toolKind]: kind,
      ...(mcpServer ? { 'canopy.mcp.server': mcpServer } : {}),
    },
  });
  if (span.isRecording() && telemetryOptions().captureMessageContent) {
    span.setAttribute(GEN_AI.toolArguments, JSON.stringify(block.input ?? null));
  }
  return span;
}

/** Ends a tool call's span with its result (an error result marks the span failed). */
export function endToolSpan(span: Span, result: ToolResultBlock, errorType = 'tool_error'): void {
  if (span.isRecording()) {
    const content = telemetryOptions().captureMessageContent;
    if (content) span.setAttribute(GEN_AI.toolResult, resultText(result));
    if (result.isError) {
      span.setAttribute(GEN_AI.errorType, errorType);
      // The error's text is the tool's output: on the span only with the content.
      span.setStatus(
        content
          ? { code: SpanStatusCode.ERROR, message: resultText(result).slice(0, 500) }
          : { code: SpanStatusCode.ERROR },
      );
    }
  }
  span.end();
}

/** A tool call's span that records a result decided elsewhere (a client tool's, a rejection): no duration here. */
export function recordToolResult(
  block: ToolUseBlock,
  kind: ToolSpanKind,
  result: ToolResultBlock,
  errorType?: string,
): void {
  endToolSpan(startToolSpan(block, kind), result, errorType);
}
