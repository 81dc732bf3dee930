// AG-UI's RunAgentInput as Canopy commands, and the run's events written back as AG-UI events (@ag-ui/encoder).
// The thread is the session (created on first use: the model from forwardedProps.model or DEFAULT_MODEL); the
// input's `tools` are the session's client tools. The server's tree is the history: the input's messages only say
// what is asked. A last user message the tree does not hold is a prompt — after the message before it when that one
// is a node off the head (a branch there), else after the head the run `parentRunId` names left (a branch there when
// that is not the head), else on the active path; a last user message the tree holds is a regeneration of its turn.
// `resume` entries (and tool messages for client tool calls) answer a paused run. Each run records the input's runId
// (a run continued by answers takes the answering input's), which is what a later parentRunId names.
// RUN_STARTED, a MESSAGES_SNAPSHOT of the active path with the new prompt, the run's events, then a
// MESSAGES_SNAPSHOT of what it committed (node ids) and RUN_FINISHED; RUN_ERROR when it fails.

import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ZodValidationException } from 'nestjs-zod';
import { EventType, type BaseEvent, type Message as AgUiMessage, type RunAgentInput } from '@ag-ui/core';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { AGUI_MEDIA_TYPE, EventEncoder } from '@ag-ui/encoder';
import { assertTargetAllowed, CANOPY_CONFIG, CanopyException, type CanopyConfig } from '@canopy/common';
import { isTurnBoundary, type ClientTool, type NodeId, type Scope, type Tree } from '@canopy/core';
import { SessionManager } from '@canopy/manager';
import type { SessionRecord } from '@canopy/store';
import { SessionCommands, type ResumeCommand } from '../http/session-commands';
import { SseRegistry } from '../http/sse';
import { branchPointOf, type ParentRun } from './ag-ui-branch';
import { AgUiEvents, agUiMessagesOf, blocksOf } from './ag-ui-events';
import { FrontendChats, type FollowedRun } from './frontend-chats.service';
import { ProtocolStream } from './protocol-stream';

const KEEP_ALIVE_MS = 15_000;

@Injectable()
export class AgUiService {
  private readonly logger = new Logger('AgUi');

  constructor(
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
    private readonly chats: FrontendChats,
    private readonly commands: SessionCommands,
    private readonly manager: SessionManager,
    private readonly streams: SseRegistry,
  ) {}

  /** Checks the input with the protocol's own schema, starts what it asks for, and streams the run. */
  async run(scope: Scope, body: unknown, req: Request, res: Response): Promise<void> {
    const parsed = RunAgentInputSchema.safeParse(body);
    if (!parsed.success) throw new ZodValidationException(parsed.error);
    const input = parsed.data as RunAgentInput;
    const props = (input.forwardedProps ?? {}) as Record<string, unknown>;
    const tools = clientToolsOf(input);
    // A thread with no session yet has no run to name: refused before one is created for it.
    if (input.parentRunId !== undefined && !(await this.chats.find(scope, input.threadId))) {
      throw noSuchParentRun();
    }
    let session = await this.chats.ensureSession(scope, input.threadId, {
      ...(typeof props.model === 'string' ? { model: props.model } : {}),
      ...(typeof props.system === 'string' ? { system: props.system } : {}),
      ...(isObject(props.opts) ? { opts: props.opts } : {}),
      ...(tools.length > 0 ? { tools } : {}),
    });
    if (tools.length > 0 && session.status === 'idle' && !sameTools(session.tools, tools)) {
      await this.manager.update(scope, input.threadId, { tools });
      session = { ...session, tools };
    }
    const { run, newMessage, path } = await this.start(scope, session, input);
    this.stream(scope, input, session.tools, run, { newMessage, path }, req, res);
  }

  private async start(
    scope: Scope,
    session: SessionRecord,
    input: RunAgentInput,
  ): Promise<{ run: FollowedRun; newMessage: AgUiMessage | null; path: Tree | null }> {
    const id = session.id;
    if (session.status === 'paused' || (input.resume?.length ?? 0) > 0) {
      return { run: await this.answerPaused(scope, session, input), newMessage: null, path: null };
    }
    const last = input.messages[input.messages.length - 1];
    if (!last || last.role !== 'user') {
      throw CanopyException.badRequest('nothing to run: the last message must be a user message', {
        field: 'messages',
      });
    }
    // The whole tree, moved where the run starts: what the opening snapshot shows.
    const tree = await this.chats.tree(scope, id);
    // Named by parentRunId: always a run of this thread (404 else), used when no message id names the place.
    const parent =
      input.parentRunId === undefined ? undefined : await this.parentRun(scope, id, input.parentRunId);
    const clientRunId = input.runId;
    const known = nodeOf(tree, last.id);
    if (known !== undefined) {
      // A prompt the tree holds: its turn again (a regeneration).
      const nodeId = turnStartOf(tree, known);
      return {
        run: await this.chats.startRun(
          scope,
          id,
          () => this.commands.branch(scope, id, { nodeId }),
          clientRunId,
        ),
        newMessage: null,
        path: tree.navigate(nodeId),
      };
    }
    const index = input.messages.length - 1;
    const { blocks: content, urls } = blocksOf(last.content, `messages.${index}.content`);
    if (content.length === 0) {
      throw CanopyException.badRequest('the user message has no text, image or document', {
        field: `messages.${index}.content`,
      });
    }
    for (const { url, field } of urls) {
      await assertTargetAllowed(url, this.config.targets.tenantUrls, field, 'attachment URL');
    }
    const before = input.messages[input.messages.length - 2];
    const anchor = branchPointOf(tree, before ? nodeOf(tree, before.id) : undefined, parent);
    if (anchor !== null) {
      return {
        run: await this.chats.startRun(
          scope,
          id,
          () => this.commands.branch(scope, id, { nodeId: anchor, content }),
          clientRunId,
        ),
        newMessage: last,
        path: tree.navigate(anchor),
      };
    }
    return {
      run: await this.chats.startRun(
        scope,
        id,
        () => this.commands.prompt(scope, id, { content }),
        clientRunId,
      ),
      newMessage: last,
      path: tree,
    };
  }

  /** The run of this thread the client named `clientRunId`: 404 when there is none (never another thread's). */
  private async parentRun(scope: Scope, id: string, clientRunId: string): Promise<ParentRun> {
    const run = await this.chats.clientRun(scope, id, clientRunId);
    if (!run) throw noSuchParentRun();
    return run;
  }

  /**
   * Answers for the calls a paused run awaits: a `resume` entry per interrupt (an approval: `payload.approved`;
   * cancelled: rejected) or, for a client tool, a tool message carrying its result.
   */
  private async answerPaused(
    scope: Scope,
    session: SessionRecord,
    input: RunAgentInput,
  ): Promise<FollowedRun> {
    const id = session.id;
    const inFlight = await this.chats.inFlight(scope, id);
    if (session.status !== 'paused' || !inFlight) {
      throw CanopyException.badRequest('nothing waits for an answer in this thread', { field: 'resume' });
    }
    const decisions: ResumeCommand[] = [];
    for (const use of inFlight.awaiting) {
      const entry = input.resume?.find((r) => r.interruptId === use.id);
      const toolMessage = input.messages.find((m) => m.role === 'tool' && m.toolCallId === use.id);
      if (entry) {
        const payload = entry.payload as { approved?: unknown; reason?: unknown } | boolean | undefined;
        const approved =
          entry.status === 'resolved' &&
          (payload === true || (typeof payload === 'object' && payload?.approved === true));
        const reason =
          typeof payload === 'object' && typeof payload?.reason === 'string' ? payload.reason : undefined;
        decisions.push({
          toolUseId: use.id,
          decision: approved
            ? { type: 'execute' }
            : { type: 'reject', ...(reason ? { reason: reason.slice(0, 2_000) } : {}) },
        });
      } else if (toolMessage && toolMessage.role === 'tool') {
        const text = textOf(toolMessage.content) || ' ';
        decisions.push({
          toolUseId: use.id,
          decision: { type: 'result', content: text, ...(toolMessage.error ? { isError: true } : {}) },
        });
      }
    }
    return this.chats.answerAll(
      scope,
      id,
      inFlight,
      decisions,
      'resume',
      (d) => this.commands.resume(scope, id, d),
      input.runId,
    );
  }

  private stream(
    scope: Scope,
    input: RunAgentInput,
    tools: readonly ClientTool[],
    run: FollowedRun,
    start: { newMessage: AgUiMessage | null; path: Tree | null },
    req: Request,
    res: Response,
  ): void {
    const { newMessage, path } = start;
    // The binary encoding only for a client that names it: any other Accept (`*/*` included) gets SSE.
    const accept = req.headers.accept;
    const encoder = new EventEncoder(accept?.includes(AGUI_MEDIA_TYPE) ? { accept } : {});
    const binary = encoder.getContentType() !== 'text/event-stream';
    res.status(200);
    res.setHeader('content-type', encoder.getContentType());
    res.setHeader('cache-control', 'no-cache, no-transform');
    res.setHeader('x-accel-buffering', 'no');
    res.flushHeaders();
    const send = (events: BaseEvent[]) => {
      for (const event of events) {
        if (res.destroyed) return;
        res.write(binary ? encoder.encodeBinary(event) : encoder.encode(event));
      }
    };
    const keepAlive = binary ? null : setInterval(() => res.write(': ping\n\n'), KEEP_ALIVE_MS);
    keepAlive?.unref();
    res.once('close', () => run.close());
    new ProtocolStream(req, res, this.streams, (reason) => run.feed.end(reason), false);
    const events = new AgUiEvents(run.runId, tools);
    const id = input.threadId;
    /**
     * The committed path, then what the run has not committed: its prompt under the client's id (the new message,
     * or for a resumed run the last user message the client sent that names no node), the rest under the run's.
     */
    const snapshot = async (): Promise<BaseEvent> => {
      const [tree, inFlight] = await Promise.all([
        this.chats.tree(scope, id),
        this.chats.inFlight(scope, id),
      ]);
      const promptId =
        newMessage?.id ??
        [...input.messages].reverse().find((m) => m.role === 'user' && nodeOf(tree, m.id) === undefined)
          ?.id ??
        `${run.runId}.prompt`;
      const pending = (inFlight?.runId === run.runId ? inFlight.pending : []).map((message, i) => ({
        id: isTurnBoundary(message) ? promptId : `${run.runId}.${i}`,
        message,
      }));
      return { type: EventType.MESSAGES_SNAPSHOT, messages: agUiMessagesOf(tree, pending) };
    };
    void (async () => {
      send([
        {
          type: EventType.RUN_STARTED,
          threadId: id,
          runId: input.runId,
          ...(input.parentRunId ? { parentRunId: input.parentRunId } : {}),
          metadata: { canopyRunId: run.runId },
        },
      ]);
      send([
        path
          ? {
              type: EventType.MESSAGES_SNAPSHOT,
              messages: agUiMessagesOf(path, [], newMessage ? [newMessage] : []),
            }
          : await snapshot(),
      ]);
      for await (const event of run.feed) {
        if (events.finishing) {
          if (event.type === 'tree' || event.type === 'store') break;
          continue;
        }
        send(events.map(event));
        if (events.ended) break;
      }
      const end = events.ended;
      if (end?.type === 'error') return;
      if (!end && !events.finishing) {
        // The session or the credential ended under the stream, or the client left.
        const reason = run.feed.endedBy ?? 'closed';
        send([{ type: EventType.RUN_ERROR, message: `${reason}: the stream was ended`, code: reason }]);
        return;
      }
      send(events.finish());
      send([await snapshot()]);
      const finished = events.runFinished(id, input.runId);
      if (finished) send([finished]);
    })()
      .catch((err: unknown) => {
        this.logger.warn(`the AG-UI stream of thread ${id} failed: ${String(err)}`);
        send([{ type: EventType.RUN_ERROR, message: 'internal error', code: 'internal' }]);
      })
      .finally(() => {
        if (keepAlive) clearInterval(keepAlive);
        run.close();
        res.end();
      });
  }
}

function noSuchParentRun(): CanopyException {
  return new CanopyException('not_found', 'parentRunId names no run of this thread', {
    field: 'parentRunId',
  });
}

/** The input's tools as the session's client tools. */
function clientToolsOf(input: RunAgentInput): ClientTool[] {
  return input.tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: isObject(t.parameters) ? t.parameters : { type: 'object', properties: {} },
  }));
}

function sameTools(a: readonly ClientTool[], b: readonly ClientTool[]): boolean {
  return (
    JSON.stringify(a.map((t) => [t.name, t.description, t.inputSchema])) ===
    JSON.stringify(b.map((t) => [t.name, t.description, t.inputSchema]))
  );
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A user message's content as text (AG-UI content parts: their text parts). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p) => (isObject(p) && p.type === 'text' && typeof p.text === 'string' ? p.text : ''))
    .filter(Boolean)
    .join('\n\n');
}

/** The node a message id names: ids of Canopy's snapshots start with the node id. */
function nodeOf(tree: Tree, messageId: string): NodeId | undefined {
  const match = /^([1-9]\d{0,15})(?:\.|$)/.exec(messageId);
  if (!match) return undefined;
  const nodeId = Number(match[1]);
  return tree.has(nodeId) ? nodeId : undefined;
}

function turnStartOf(tree: Tree, nodeId: NodeId): NodeId {
  let node = tree.getNode(nodeId);
  while (node && !isTurnBoundary(node.message)) {
    node = node.parentId === null ? undefined : tree.getNode(node.parentId);
  }
  if (!node) throw CanopyException.badRequest('that message is not in a turn', { field: 'messages' });
  return node.id;
}
