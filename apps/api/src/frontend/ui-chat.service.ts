// The AI SDK's chat requests as Canopy commands. The server's tree is the history, never the client's copy: the
// client's messages only say what it asks for. `submit-message` is a prompt (with `messageId`, an edit of that
// prompt: a new version of it); a submit that answers the tool calls a paused run waits for (the client's tool
// outputs and approval responses in its last assistant message) resumes that run; `regenerate-message` regenerates
// the turn of the message it names (a node id, as GET …/messages gives them, the node its metadata names, or else
// the turn at the same place on the active path as in the client's copy).

import { Inject, Injectable } from '@nestjs/common';
import { assertTargetAllowed, CANOPY_CONFIG, CanopyException, type CanopyConfig } from '@canopy/common';
import {
  isTurnBoundary,
  type Block,
  type ClientTool,
  type InFlight,
  type NodeId,
  type Scope,
  type Tree,
} from '@canopy/core';
import type { SessionRecord } from '@canopy/store';
import { SessionCommands } from '../http/session-commands';
import { FrontendChats, type FollowedRun } from './frontend-chats.service';
import type { UiChatRequest, UiMessageInput } from './frontend.dto';

@Injectable()
export class UiChatService {
  constructor(
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
    private readonly chats: FrontendChats,
    private readonly commands: SessionCommands,
  ) {}

  /** Starts what the request asks for and follows its run (with the session's client tools). */
  async send(scope: Scope, request: UiChatRequest): Promise<FollowedRun & { tools: ClientTool[] }> {
    const session = await this.chats.ensureSession(scope, request.id, {
      ...(request.model !== undefined ? { model: request.model } : {}),
      ...(request.system !== undefined ? { system: request.system } : {}),
      ...(request.opts !== undefined ? { opts: request.opts } : {}),
      ...(request.tools !== undefined ? { tools: request.tools } : {}),
    });
    return { ...(await this.start(scope, session, request)), tools: session.tools };
  }

  private async start(scope: Scope, session: SessionRecord, request: UiChatRequest): Promise<FollowedRun> {
    const id = request.id;
    if (request.trigger === 'regenerate-message') {
      const tree = await this.chats.tree(scope, id);
      const nodeId = regenerateTarget(tree, request);
      return this.chats.startRun(scope, id, () => this.commands.branch(scope, id, { nodeId }));
    }
    if (session.status === 'paused') {
      const inFlight = await this.chats.inFlight(scope, id);
      if (inFlight) return this.answerPaused(scope, id, inFlight, request);
    }
    const last = request.messages[request.messages.length - 1];
    if (!last || last.role !== 'user') {
      throw CanopyException.badRequest('submit-message needs a user message last in `messages`', {
        field: 'messages',
      });
    }
    const content = contentOf(last);
    await this.checkFileUrls(request.messages.length - 1, last);
    if (request.messageId !== undefined) {
      const tree = await this.chats.tree(scope, id);
      const edited = editTarget(tree, request);
      if (edited !== undefined) {
        return this.chats.startRun(scope, id, () =>
          this.commands.branch(scope, id, { nodeId: edited, content }),
        );
      }
    }
    return this.chats.startRun(scope, id, () => this.commands.prompt(scope, id, { content }));
  }

  /** 400 on the first file URL of the message (`messages.<i>.parts.<j>.url`) that leads where tenant URLs may not. */
  private async checkFileUrls(index: number, message: UiMessageInput): Promise<void> {
    for (const [j, part] of (message.parts as Array<Record<string, unknown>>).entries()) {
      if (part.type !== 'file' || typeof part.url !== 'string' || !/^https?:/i.test(part.url)) continue;
      await assertTargetAllowed(
        part.url,
        this.config.targets.tenantUrls,
        `messages.${index}.parts.${j}.url`,
        'file URL',
      );
    }
  }

  /**
   * The client's answers to a paused run: each awaited tool call's output, error or approval response in the
   * request's last assistant message becomes that call's decision; the last decision continues the run, followed
   * from there.
   */
  private async answerPaused(
    scope: Scope,
    id: string,
    inFlight: InFlight,
    request: UiChatRequest,
  ): Promise<FollowedRun> {
    const lastAssistant = [...request.messages].reverse().find((m) => m.role === 'assistant');
    const parts = (lastAssistant?.parts ?? []) as Array<Record<string, unknown>>;
    const decisions: Array<{
      toolUseId: string;
      decision: Parameters<SessionCommands['resume']>[2]['decision'];
    }> = [];
    for (const use of inFlight.awaiting) {
      const part = parts.find((p) => p.toolCallId === use.id);
      const decision = part ? decisionOf(part) : null;
      if (decision) decisions.push({ toolUseId: use.id, decision });
    }
    return this.chats.answerAll(scope, id, inFlight, decisions, 'messages', (d) =>
      this.commands.resume(scope, id, d),
    );
  }
}

/** A tool part's answer: its output or error (a client tool), or an approval response. */
function decisionOf(
  part: Record<string, unknown>,
): Parameters<SessionCommands['resume']>[2]['decision'] | null {
  switch (part.state) {
    case 'output-available': {
      const output = part.output;
      const text = typeof output === 'string' ? output : JSON.stringify(output ?? null);
      return { type: 'result', content: text === '' ? ' ' : text };
    }
    case 'output-error':
      return {
        type: 'result',
        content: typeof part.errorText === 'string' && part.errorText ? part.errorText : 'error',
        isError: true,
      };
    case 'approval-responded':
    case 'output-denied': {
      const approval = (part.approval ?? {}) as { approved?: unknown; reason?: unknown };
      if (approval.approved === true) return { type: 'execute' };
      return {
        type: 'reject',
        ...(typeof approval.reason === 'string' ? { reason: approval.reason.slice(0, 2_000) } : {}),
      };
    }
    default:
      return null;
  }
}

/** A UI message's text and file parts as Canopy content (400 when it has neither). */
export function contentOf(message: UiMessageInput): Block[] {
  const blocks: Block[] = [];
  for (const part of message.parts as Array<Record<string, unknown>>) {
    if (part.type === 'text' && typeof part.text === 'string' && part.text !== '') {
      blocks.push({ type: 'text', text: part.text });
    } else if (part.type === 'file' && typeof part.url === 'string' && typeof part.mediaType === 'string') {
      const name = typeof part.filename === 'string' ? { name: part.filename } : {};
      const data = /^data:[^;,]*;base64,(.*)$/s.exec(part.url)?.[1];
      // A stored file as GET …/messages gives it (its content route): by its id.
      const fileId = /^\/v1\/files\/([^/?#]+)\/content$/.exec(part.url)?.[1];
      blocks.push(
        data !== undefined
          ? { type: 'attachment', mediaType: part.mediaType, data, ...name }
          : fileId !== undefined
            ? { type: 'attachment', mediaType: part.mediaType, fileId: decodeURIComponent(fileId), ...name }
            : { type: 'attachment', mediaType: part.mediaType, url: part.url, ...name },
      );
    }
  }
  if (blocks.length === 0) {
    throw CanopyException.badRequest('the message has no text or file part', { field: 'messages' });
  }
  return blocks;
}

/** The user node of the turn a request regenerates. */
export function regenerateTarget(tree: Tree, request: UiChatRequest): NodeId {
  const prompts = tree.path.filter((id) => isTurnBoundary(tree.getNode(id)!.message));
  if (prompts.length === 0) {
    throw CanopyException.badRequest('nothing to regenerate: the conversation has no prompt yet', {
      field: 'trigger',
    });
  }
  const named = request.messageId !== undefined ? nodeNamed(tree, request, request.messageId) : undefined;
  if (named !== undefined) return turnStartOf(tree, named);
  // The client's copy ends with the prompt of the turn regenerated (the reply is cut off before sending).
  const last = request.messages[request.messages.length - 1];
  const lastNode = last ? nodeNamed(tree, request, last.id) : undefined;
  if (lastNode !== undefined) return turnStartOf(tree, lastNode);
  const promptsSent = request.messages.filter((m) => m.role === 'user').length;
  return prompts[Math.min(Math.max(promptsSent, 1), prompts.length) - 1]!;
}

/**
 * The prompt node a submit with `messageId` edits, when it names one; undefined for a message the server cannot
 * place (then the submit is a plain prompt).
 */
function editTarget(tree: Tree, request: UiChatRequest): NodeId | null | undefined {
  const node = nodeNamed(tree, request, request.messageId!);
  if (node === undefined) return undefined;
  const prompt = turnStartOf(tree, node);
  // An edit is a new version of the prompt: a sibling under the same parent (a new root for the first prompt).
  return tree.getNode(prompt)!.parentId;
}

/** The node a message id names: a node id (GET …/messages ids), or the node its metadata names. */
function nodeNamed(tree: Tree, request: UiChatRequest, messageId: string): NodeId | undefined {
  if (/^[1-9]\d{0,15}$/.test(messageId) && tree.has(Number(messageId))) return Number(messageId);
  const message = request.messages.find((m) => m.id === messageId);
  const nodeId = (message?.metadata as { nodeId?: unknown } | undefined)?.nodeId;
  return typeof nodeId === 'number' && tree.has(nodeId) ? nodeId : undefined;
}

/** The prompt that starts the turn a node belongs to. */
function turnStartOf(tree: Tree, nodeId: NodeId): NodeId {
  let node = tree.getNode(nodeId);
  while (node && !isTurnBoundary(node.message)) {
    node = node.parentId === null ? undefined : tree.getNode(node.parentId);
  }
  if (!node) throw CanopyException.badRequest('that message is not in a turn', { field: 'messageId' });
  return node.id;
}
