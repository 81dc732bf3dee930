// A session's active path as the AI SDK's UIMessage[] (GET /v1/ui/chat/:id/messages): a user message per prompt
// (text and file parts), an assistant message per reply — its model calls as steps (`step-start`), with text,
// reasoning and tool parts, tool results folded into their calls. Every message's metadata names its node and the
// versions of its turn (`{nodeId, versions, versionIndex}`: the edits of a prompt, the regenerations of a reply), so
// a UI shows ‹2/3› and moves between them with POST /v1/sessions/:id/navigate. The run in flight follows the path:
// its prompt, then its reply so far under the run's id (the id its stream gives it). Message ids are node ids.
// Pure: no I/O.

import type { UIMessage } from 'ai';
import {
  isToolResultMessage,
  isTurnBoundary,
  type Block,
  type ClientTool,
  type InFlight,
  type Message,
  type NodeId,
  type Tree,
} from '@canopy/core';
import { toolOutputOf, type UiMessageMetadata } from './ui-message-chunks';

export type CanopyUiMessage = UIMessage<UiMessageMetadata>;
type Part = CanopyUiMessage['parts'][number];
type ToolPart = Extract<Part, { toolCallId: string }>;

export function uiMessagesOf(
  tree: Tree,
  inFlight: InFlight | null,
  paused: boolean,
  clientTools: readonly ClientTool[],
): CanopyUiMessage[] {
  const out: CanopyUiMessage[] = [];
  let reply: CanopyUiMessage | null = null;
  for (const node of tree) {
    const { message } = node;
    if (isTurnBoundary(message)) {
      reply = null;
      out.push(userMessageOf(String(node.id), message, versionsOf(tree, node.id)));
    } else if (message.role === 'assistant') {
      if (!reply) {
        reply = { id: String(node.id), role: 'assistant', metadata: versionsOf(tree, node.id), parts: [] };
        out.push(reply);
      }
      appendStep(reply, message);
    } else if (reply) {
      appendResults(reply, message);
    }
  }
  if (!inFlight) return out;
  const noVersions: UiMessageMetadata = { nodeId: null, versions: [], versionIndex: 0 };
  let inFlightReply: CanopyUiMessage | null = null;
  for (const message of inFlight.pending) {
    if (isTurnBoundary(message)) {
      out.push(userMessageOf(`${inFlight.runId}-prompt`, message, noVersions));
    } else if (message.role === 'assistant') {
      if (!inFlightReply) {
        inFlightReply = { id: inFlight.runId, role: 'assistant', metadata: noVersions, parts: [] };
        out.push(inFlightReply);
      }
      appendStep(inFlightReply, message);
    } else if (inFlightReply) {
      appendResults(inFlightReply, message);
    }
  }
  if (paused && inFlightReply) {
    const awaiting = new Set(inFlight.awaiting.map((u) => u.id));
    for (const part of inFlightReply.parts) {
      if (!isToolPart(part) || !awaiting.has(part.toolCallId) || part.state !== 'input-available') continue;
      const name = part.type.slice('tool-'.length);
      const byClient = clientTools.some((t) => t.name === name && t.approval !== true);
      if (!byClient) Object.assign(part, { state: 'approval-requested', approval: { id: part.toolCallId } });
    }
  }
  return out;
}

/** A node's place among its versions (its siblings, itself included). */
export function versionsOf(tree: Tree, nodeId: NodeId): UiMessageMetadata {
  const parentId = tree.getNode(nodeId)?.parentId ?? null;
  const versions = parentId === null ? tree.roots() : tree.children(parentId);
  return { nodeId, versions, versionIndex: Math.max(0, versions.indexOf(nodeId)) };
}

function userMessageOf(id: string, message: Message, metadata: UiMessageMetadata): CanopyUiMessage {
  const parts: Part[] = [];
  for (const block of message.content) {
    if (block.type === 'text') parts.push({ type: 'text', text: block.text });
    else if (block.type === 'attachment') parts.push(filePart(block));
  }
  return { id, role: 'user', metadata, parts };
}

function filePart(block: Extract<Block, { type: 'attachment' }>): Part {
  // A stored file is named by its content route (read with the chat's credential), never inlined.
  const url =
    block.url ??
    (block.fileId !== undefined
      ? `/v1/files/${block.fileId}/content`
      : `data:${block.mediaType};base64,${block.data ?? ''}`);
  return { type: 'file', mediaType: block.mediaType, url, ...(block.name ? { filename: block.name } : {}) };
}

function appendStep(reply: CanopyUiMessage, message: Message): void {
  reply.parts.push({ type: 'step-start' });
  for (const block of message.content) {
    if (block.type === 'text') reply.parts.push({ type: 'text', text: block.text, state: 'done' });
    else if (block.type === 'thinking')
      reply.parts.push({ type: 'reasoning', text: block.text, state: 'done' });
    else if (block.type === 'tool_use') {
      reply.parts.push({
        type: `tool-${block.name}`,
        toolCallId: block.id,
        state: 'input-available',
        input: block.input,
      });
    }
  }
}

function appendResults(reply: CanopyUiMessage, message: Message): void {
  if (!isToolResultMessage(message)) return;
  for (const block of message.content) {
    if (block.type !== 'tool_result') continue;
    const part = reply.parts.find((p) => isToolPart(p) && p.toolCallId === block.toolUseId) as
      ToolPart | undefined;
    if (!part) continue;
    if (block.isError) {
      const errorText = typeof block.content === 'string' ? block.content : String(toolOutputOf(block));
      Object.assign(part, { state: 'output-error', errorText });
    } else {
      Object.assign(part, { state: 'output-available', output: toolOutputOf(block) });
    }
  }
}

function isToolPart(part: Part): part is ToolPart {
  return part.type.startsWith('tool-') && 'toolCallId' in part;
}
