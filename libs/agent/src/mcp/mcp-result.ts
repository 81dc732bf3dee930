// What an MCP server's answers become in Canopy: a tools/call result as the tool result the model sees (text,
// images and embedded binary resources as attachments, resource links as text, structured content as JSON text when
// the server gave no text of it, isError kept), the names the model sees (`<server>__<tool>`), and a server's
// approval policy for one tool.

import type { AttachmentBlock, McpApproval, TextBlock } from '@canopy/core';
import { MCP_TOOL_SEPARATOR } from '@canopy/core';
import type { ToolOutput } from '../tools/server-tool';

/** The result of tools/call as the SDK parses it (content items of every kind the protocol defines). */
export interface McpCallResult {
  content?: Array<Record<string, unknown>>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  /** The pre-2024-11-05 shape: `toolResult`. */
  toolResult?: unknown;
}

/** The tool result the model sees of what the server answered. */
export function toolOutputOf(result: McpCallResult): ToolOutput {
  if (result.content === undefined && 'toolResult' in result) {
    return { content: JSON.stringify(result.toolResult ?? null), isError: false };
  }
  const blocks: Array<TextBlock | AttachmentBlock> = [];
  for (const item of result.content ?? []) blocks.push(blockOf(item));
  if (result.structuredContent !== undefined && !blocks.some((b) => b.type === 'text')) {
    blocks.push({ type: 'text', text: JSON.stringify(result.structuredContent) });
  }
  const isError = result.isError === true;
  if (blocks.length === 0) return { content: '', isError };
  if (blocks.every((b) => b.type === 'text')) {
    return { content: blocks.map((b) => (b).text).join('\n'), isError };
  }
  return { content: blocks, isError };
}

function blockOf(item: Record<string, unknown>): TextBlock | AttachmentBlock {
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  switch (item.type) {
    case 'text':
      return { type: 'text', text: str(item.text) };
    case 'image':
      return { type: 'attachment', mediaType: str(item.mimeType) || 'image/png', data: str(item.data) };
    case 'audio':
      return { type: 'attachment', mediaType: str(item.mimeType) || 'audio/wav', data: str(item.data) };
    case 'resource_link': {
      const title = str(item.title) || str(item.name) || str(item.uri);
      const description = str(item.description);
      return {
        type: 'text',
        text: `[resource: ${title}](${str(item.uri)})${description ? ` ${description}` : ''}`,
      };
    }
    case 'resource': {
      const resource = (item.resource ?? {}) as Record<string, unknown>;
      if (typeof resource.text === 'string') return { type: 'text', text: resource.text };
      const mediaType = str(resource.mimeType) || 'application/octet-stream';
      if (typeof resource.blob === 'string') {
        return { type: 'attachment', mediaType, data: resource.blob, name: str(resource.uri) };
      }
      return { type: 'text', text: `[resource: ${str(resource.uri)}]` };
    }
    default:
      return { type: 'text', text: JSON.stringify(item) };
  }
}

/**
 * The name the model sees of a server's tool: `<server>__<tool>`, with what model providers refuse in a tool name
 * (anything but letters, digits, _ and -) replaced by _, at most 64 characters.
 */
export function modelToolName(server: string, tool: string): string {
  return `${server}${MCP_TOOL_SEPARATOR}${tool.replace(/[^a-zA-Z0-9_-]/g, '_')}`.slice(0, 64);
}

/** Whether a call of this tool waits for a decision under the server's approval policy. */
export function needsApproval(approval: McpApproval, tool: string): boolean {
  if (approval === 'always') return true;
  if (approval === 'never') return false;
  return approval[tool] === 'always';
}
