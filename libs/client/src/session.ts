// One session of the API: its data, its tree, the commands that drive it, and its live events and turns.

import {
  SESSION_EVENT_TYPES,
  TurnResult,
  type Message,
  type MessageContent,
  type NodeId,
  type SessionEventBody,
  type SessionEventType,
  type Turn,
  type TurnResultData,
} from '@canopy/core';

import type { ExportByFormat } from './catalog';
import type { ExportFormat, ForkInput } from './catalog-types';
import type { Http } from './http';
import { LiveTurns } from './live-turns-handle';
import type { TurnsPage } from './live-turns';
import { credentialEnd, sseStream } from './sse';
import type {
  Accepted,
  Decision,
  NodeView,
  OpenedSession,
  OpenSessionInput,
  PromptOptions,
  SessionDetail,
  TreeView,
  UpdateSessionInput,
} from './types';
import type { ContextView, CreatedShareView, FeedbackRating, FeedbackView, SessionInfo } from '@canopy/core';

export interface EventsOptions {
  /** Start after this seq (the events missed since); default: a snapshot, then every later event. */
  after?: number;
  /** `controller` (default) keeps the session live; `observer` only watches. */
  mode?: 'controller' | 'observer';
  signal?: AbortSignal;
}

const EVENT_TYPES = new Set<string>(SESSION_EVENT_TYPES);

export class Session {
  constructor(
    private readonly http: Http,
    readonly id: string,
  ) {}

  private path(suffix = ''): string {
    return `/v1/sessions/${encodeURIComponent(this.id)}${suffix}`;
  }

  // Data

  get(signal?: AbortSignal): Promise<SessionDetail> {
    return this.http.request('GET', this.path(), { ...(signal ? { signal } : {}) });
  }

  update(patch: UpdateSessionInput): Promise<SessionInfo> {
    return this.http.request('PATCH', this.path(), { body: patch, idempotent: true });
  }

  /**
   * Opens the session live with start options reconciled with its persisted state: the
   * persisted model wins while usable, `system` and `opts` given here win. `seq` is where to start `events()`.
   */
  open(options: OpenSessionInput = {}): Promise<OpenedSession> {
    return this.http.request('POST', this.path('/open'), { body: options });
  }

  /** Stops the session being live (stored data untouched; idempotent). */
  close(): Promise<void> {
    return this.http.request('POST', this.path('/close'), { idempotent: true });
  }

  delete(): Promise<void> {
    return this.http.request('DELETE', this.path());
  }

  /** Pins the session (exempt from the tenant's retention policy) or unpins it. */
  pin(pinned = true): Promise<SessionInfo> {
    return this.update({ pinned });
  }

  /**
   * A new session whose tree is this one's path from the root to `nodeId` (default: the active tip), ids from 1,
   * usage kept; `metadata.forkedFrom` names this session and the node. Works while this session is busy.
   */
  async fork(input: ForkInput = {}): Promise<{ session: Session; info: SessionInfo }> {
    const info = await this.http.request<SessionInfo>('POST', this.path('/fork'), { body: input });
    return { session: new Session(this.http, info.id), info };
  }

  /** The session in a format: canopy (the whole tree), openai / anthropic (the active path), markdown (text). */
  async export<F extends ExportFormat = 'canopy'>(format?: F): Promise<ExportByFormat[F]> {
    const res = await this.http.send('GET', this.path('/export'), { query: { format: format ?? 'canopy' } });
    return (format === 'markdown' ? await res.text() : await res.json()) as ExportByFormat[F];
  }

  /** A read-only link to the path up to `nodeId` (default: the head) as it is now; its token is shown once. */
  share(
    input: { nodeId?: NodeId; expiresAt?: string; title?: string | null; includeUsage?: boolean } = {},
  ): Promise<CreatedShareView> {
    return this.http.request('POST', this.path('/shares'), { body: input });
  }

  /** Rates a reply (an assistant node): one rating per rater and reply, replaced by the next. */
  rate(
    nodeId: NodeId,
    input: { rating: FeedbackRating; comment?: string | null; tags?: string[]; userId?: string },
  ): Promise<FeedbackView> {
    return this.http.request('PUT', this.path(`/nodes/${nodeId}/feedback`), {
      body: input,
      idempotent: true,
    });
  }

  /** Removes the rater's rating of a reply. */
  unrate(nodeId: NodeId, userId?: string): Promise<void> {
    return this.http.request('DELETE', this.path(`/nodes/${nodeId}/feedback`), { query: { userId } });
  }

  /** The ratings of this session's replies the caller may read (a user token: its own), newest first. */
  async ratings(): Promise<FeedbackView[]> {
    return (
      await this.http.request<{ data: FeedbackView[] }>('GET', '/v1/feedback', {
        query: { sessionId: this.id, limit: 500 },
      })
    ).data;
  }

  tree(): Promise<TreeView> {
    return this.http.request('GET', this.path('/tree'));
  }

  /**
   * What the next run from a node (default: the head) would send under the session's context policy: its tokens
   * against the window, the messages kept and the summary in use (`summary`, null when none).
   */
  context(nodeId?: NodeId): Promise<ContextView> {
    return this.http.request('GET', this.path('/context'), nodeId !== undefined ? { query: { nodeId } } : {});
  }

  node(nodeId: NodeId): Promise<NodeView> {
    return this.http.request('GET', this.path(`/nodes/${nodeId}`));
  }

  async children(nodeId: NodeId): Promise<NodeId[]> {
    return (await this.http.request<{ ids: NodeId[] }>('GET', this.path(`/nodes/${nodeId}/children`))).ids;
  }

  /** The other children of the node's parent (the other roots for a root), the node itself not included. */
  async siblings(nodeId: NodeId): Promise<NodeId[]> {
    return (await this.http.request<{ ids: NodeId[] }>('GET', this.path(`/nodes/${nodeId}/siblings`))).ids;
  }

  /** The ids from the root down to the node. */
  async pathTo(nodeId: NodeId): Promise<NodeId[]> {
    return (await this.http.request<{ ids: NodeId[] }>('GET', this.path(`/nodes/${nodeId}/path`))).ids;
  }

  async messages(): Promise<Message[]> {
    return (await this.http.request<{ data: Message[] }>('GET', this.path('/messages'))).data;
  }

  /** The turns of the active path, once (see `turns()` for a live list). */
  async getTurns(): Promise<Turn[]> {
    return (await this.http.request<{ data: Turn[] }>('GET', this.path('/turns'))).data;
  }

  /**
   * A page of the active path's turns: the latest `limit` of those that start before node `before` (default: the
   * last ones), and whether turns come before them.
   */
  turnsPage(options: { before?: NodeId | null; limit?: number } = {}): Promise<TurnsPage> {
    const query: Record<string, string | number> = {};
    if (options.before !== undefined && options.before !== null) query.before = options.before;
    if (options.limit !== undefined) query.limit = options.limit;
    return this.http.request('GET', this.path('/turns'), { query });
  }

  /** The turn that starts at user node `nodeId` on the active path (not_found otherwise). */
  getTurn(nodeId: NodeId): Promise<Turn> {
    return this.http.request('GET', this.path(`/turns/${nodeId}`));
  }

  // Commands

  /** Starts a run with a prompt; answers its id at once. */
  prompt(content: MessageContent, options: PromptOptions = {}): Promise<Accepted> {
    return this.http.request('POST', this.path('/prompt'), { body: promptBody(content, options) });
  }

  /**
   * Prompts and waits for the run to stop, pause, fail or be cancelled: its TurnResult (the run's messages, tool calls and results, and its final response), whose
   * `runId` and `status` (completed, paused, cancelled, error, max_steps) say what happened, with the tool
   * calls `awaiting` a decision when it paused.
   */
  async run(content: MessageContent, options: PromptOptions = {}): Promise<TurnResult> {
    const data = await this.http.request<TurnResultData>('POST', this.path('/prompt'), {
      body: { ...promptBody(content, options), wait: true },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return new TurnResult(data);
  }

  /**
   * Branches: a user node and no content regenerates its reply; an assistant node with content edits the next
   * prompt; null with content starts a new root.
   */
  branch(nodeId: NodeId | null, content?: MessageContent): Promise<Accepted> {
    return this.http.request('POST', this.path('/branch'), {
      body: { nodeId, ...(content !== undefined ? { content } : {}) },
    });
  }

  /** branch(), waiting for the run's TurnResult. */
  async branchAndWait(nodeId: NodeId | null, content?: MessageContent): Promise<TurnResult> {
    const data = await this.http.request<TurnResultData>('POST', this.path('/branch'), {
      body: { nodeId, ...(content !== undefined ? { content } : {}), wait: true },
    });
    return new TurnResult(data);
  }

  /** A new reply to the user message `userNodeId`. */
  regenerate(userNodeId: NodeId): Promise<Accepted> {
    return this.branch(userNodeId);
  }

  /** Replaces the prompt that follows `assistantNodeId` (null: the first prompt) with `content`. */
  edit(assistantNodeId: NodeId | null, content: MessageContent): Promise<Accepted> {
    return this.branch(assistantNodeId, content);
  }

  /** Moves the active path to `nodeId` (and on to a tip); null clears it. */
  navigate(nodeId: NodeId | null): Promise<{ path: NodeId[]; head: NodeId | null }> {
    return this.http.request('POST', this.path('/navigate'), { body: { nodeId }, idempotent: true });
  }

  /** Takes a queued prompt (`ifBusy` enqueue, interrupt, rollback) out of the queue before its turn. */
  cancelQueued(queueId: string): Promise<void> {
    return this.http.request('DELETE', this.path(`/queue/${encodeURIComponent(queueId)}`));
  }

  cancel(): Promise<{ runId: string }> {
    return this.http.request('POST', this.path('/cancel'));
  }

  /** Decides on a paused run's tool use (the only one awaited, or `toolUseId`). */
  resume(decision: Decision, toolUseId?: string): Promise<Accepted> {
    return this.http.request('POST', this.path('/resume'), {
      body: { decision, ...(toolUseId !== undefined ? { toolUseId } : {}) },
    });
  }

  // Live

  /**
   * The session's events: a snapshot first (unless `after`), then every later event, in seq order. The stream
   * reconnects by itself and resumes after the last seq it yielded, so a caller sees no gap and no duplicate.
   * It ends when the signal aborts or the session is deleted, and throws `unauthorized` or `tenant_disabled` when the
   * server ended it because its credential stopped being valid.
   */
  async *events(options: EventsOptions = {}): AsyncGenerator<SessionEventBody> {
    let last = options.after;
    let deleted = false;
    const messages = sseStream(this.http, this.path('/events'), {
      query: { mode: options.mode },
      resumeQuery: () => (last !== undefined ? { after: last } : {}),
      shouldReconnect: () => !deleted,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    for await (const message of messages) {
      if (message.event === 'end') {
        const refused = credentialEnd(message);
        if (refused) throw refused;
        deleted = parseJson<{ reconnect?: boolean }>(message.data)?.reconnect === false;
        continue;
      }
      if (!EVENT_TYPES.has(message.event) || message.id === undefined) continue;
      const seq = Number(message.id);
      // A snapshot is a new starting point; any other event at or below the last seq was already seen.
      if (message.event !== 'snapshot' && last !== undefined && seq <= last) continue;
      last = seq;
      yield {
        seq,
        sessionId: this.id,
        type: message.event as SessionEventType,
        data: parseJson(message.data),
      } as SessionEventBody;
    }
  }

  /**
   * A live list of the session's UI turns (each prompt with its reply, tool calls and branch versions), the one in flight included, kept current from its events.
   * Call `close()` when done.
   */
  turns(options: Omit<EventsOptions, 'after'> = {}): LiveTurns {
    return new LiveTurns(
      (signal) => this.events({ ...options, signal }),
      options.signal,
      (before, limit) => this.turnsPage({ before, limit }),
    );
  }
}

function promptBody(content: MessageContent, options: PromptOptions): Record<string, unknown> {
  return {
    content,
    ...(options.ifBusy ? { ifBusy: options.ifBusy } : {}),
    ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
  };
}

function parseJson<T = unknown>(text: string): T {
  return JSON.parse(text) as T;
}
