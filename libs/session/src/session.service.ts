// The commands on one session over a persisted tree: get, prompt (with steering or the queue of prompt-queue.ts),
// branch (regenerate, edit, new root), navigate, cancel, resume, subscribe and wait. What a process does for the
// runs it executes (execution, sweeps, recovery, stop) is RunDuties'; both share the executor and the decisions
// (session-layer.ts assembles them). Status changes are compare-and-set in the store, so two commands
// racing for an idle session never both win; events follow every change, `status` first. Sessions as a
// population (create, open, close, delete, list, where each is live) belong to the manager, which gives this
// engine its live sessions through the LiveSessionHost port.

import {
  DEFAULT_LIVE_PATH_NODES,
  liveViewOf,
  Tree,
  TurnResult,
  emptyUsage,
  isToolResultMessage,
  systemScope,
  toolUses,
  userMessage,
  type Block,
  type MessageContent,
  type NodeId,
  type RunKind,
  type Scope,
  type SessionEvent,
  type SessionEventInput,
  type SessionSnapshot,
  type ContextSummary,
  type TreeNode,
} from '@canopy/core';
import { CanopyException } from '@canopy/common';
import {
  isPendingState,
  keptOnInterrupt,
  keptOnInterruptWhilePaused,
  type PendingState,
} from '@canopy/agent';
import type { CancelReason } from '@canopy/queue';
import type {
  ClientRunRecord,
  FailedTurn,
  JsonObject,
  PositionRecord,
  QueuedRunRecord,
  RunRecord,
  SessionRecord,
} from '@canopy/store';
import { BUSY_COUNT_MAX_AGE_MS, BusyLimitGate } from './busy-limit-gate';
import { positionOf } from './convert';
import type { LiveSession, SubscribeOptions, Subscription } from './live-session';
import type { LiveSessionHost } from './live-session-host';
import { RunExecutor, type KeptWork, type RunInput } from './run-executor';
import type { RunResult } from './run-tracker';
import type { SessionEngineDeps } from './session-deps';
import type { SessionPublisher } from './session-publisher';
import type { Decisions, ResumeInput } from './decisions';
import { checkContent, requireIdle } from './session-input';
import { PromptQueue, queuedPromptView, type QueuedPromptView } from './prompt-queue';
import { quotaExceeded } from './quotas/quota-admission';

export type { ResumeInput } from './decisions';

/** What the commands use: the whole store, quotas, the queue and run control, their settings, the log. */
export type SessionServiceDeps = Pick<
  SessionEngineDeps,
  'store' | 'admission' | 'control' | 'logger' | 'queue' | 'settings'
>;

export interface PromptInput {
  content: MessageContent;
  /** A busy session: refuse, steer the run in flight, or queue it (see prompt-queue.ts). */
  ifBusy?: 'reject' | 'steer' | 'enqueue' | 'interrupt' | 'rollback';
  maxSteps?: number;
}

export interface BranchInput {
  nodeId: NodeId | null;
  content?: MessageContent;
  maxSteps?: number;
}

export interface CommandResult {
  runId: string;
  /** True when a prompt was staged on a busy run instead of starting one. */
  staged?: boolean;
  /** True when a prompt waits in the session's queue (its run will have `runId`). */
  queued?: boolean;
}

/** How long a cancel waits for the process executing a run to acknowledge, before ending the run itself. */
const CANCEL_ACK_TIMEOUT_MS = 3_000;

/** How often a steered prompt that lost the race to start a run tries to stage on the winner's run. */
const STEER_START_ATTEMPTS = 5;

export class SessionService {
  private readonly executor: RunExecutor;
  private readonly queue: PromptQueue;
  private readonly decisions: Decisions;
  /** When a start counts the tenant's busy sessions (its limit of runs in flight); null without a limit. */
  private readonly busyGate: BusyLimitGate | null;

  constructor(
    private readonly deps: SessionServiceDeps,
    private readonly live: LiveSessionHost,
    private readonly publisher: SessionPublisher,
    runs: { executor: RunExecutor; decisions: Decisions },
  ) {
    const limit = deps.settings.maxBusyPerTenant;
    this.busyGate =
      limit === undefined
        ? null
        : new BusyLimitGate(limit, Date.now, deps.settings.busyCountMaxAgeMs ?? BUSY_COUNT_MAX_AGE_MS);
    this.decisions = runs.decisions;
    this.executor = runs.executor;
    this.queue = new PromptQueue(deps, this.publisher, {
      prompt: (scope, id, input, runId) =>
        this.start(scope, id, 'prompt', input, undefined, undefined, runId),
      branchAt: (scope, id, nodeId, input, runId) => this.branch(scope, id, { nodeId, ...input }, runId),
      cancelRun: (scope, id, runId, reason) => this.cancelRun(scope, id, runId, reason),
    });
    // A run that ends here starts the session's next queued prompt.
    this.executor.onRunFinished((tenantId, id) => this.queue.drainLater(tenantId, id));
  }

  /**
   * Starts the queued prompts of idle sessions: those a process that died (or a database outage) left waiting.
   * Never throws.
   */
  async startQueuedPrompts(): Promise<void> {
    await this.queue.sweep();
  }

  /** Tells `listener` how many events each publish carried (metrics); the returned function stops it. */
  onEventsPublished(listener: (count: number) => void): () => void {
    return this.publisher.onPublished(listener);
  }

  // Sessions

  async get(scope: Scope, id: string): Promise<SessionRecord> {
    const record = await this.deps.store.get(scope, id);
    if (!record) throw CanopyException.notFound('session');
    return record;
  }

  // Tree

  async tree(
    scope: Scope,
    id: string,
  ): Promise<SessionSnapshot['tree'] & { roots: NodeId[]; usage: ReturnType<LiveSession['tree']['usage']> }> {
    const tree = await this.wholeTree(scope, id, await this.liveSession(scope, id));
    const data = tree.toJSON();
    return {
      nodes: data.nodes,
      path: data.path,
      cursors: data.cursors,
      head: tree.head,
      roots: tree.roots(),
      usage: tree.usage(),
    };
  }

  /** The stored session and its whole tree (a read: the session is not made live). */
  async loadTree(scope: Scope, id: string): Promise<{ session: SessionRecord; tree: Tree }> {
    const loaded = await this.deps.store.loadTree(scope, id);
    if (!loaded) throw CanopyException.notFound('session');
    const { session, nodes } = loaded;
    const tree = Tree.hydrate({
      nodes,
      path: session.path,
      cursors: session.cursors,
      nextId: session.nextNodeId,
    });
    return { session, tree };
  }

  /** The context summaries stored against the nodes (GET …/context shows the one in use). */
  summariesOn(scope: Scope, id: string, nodeIds: readonly number[]): Promise<ContextSummary[]> {
    return this.deps.store.summariesOn(scope, id, nodeIds);
  }

  /** The turns of the session whose latest regeneration failed, with the error (GET …/turns marks them). */
  failedTurns(scope: Scope, id: string): Promise<FailedTurn[]> {
    return this.deps.store.failedTurns(scope, id);
  }

  /** Records the id the client gave a run of the session (AG-UI's runId); false when the scope sees no such run. */
  setClientRunId(scope: Scope, id: string, runId: string, clientRunId: string): Promise<boolean> {
    return this.deps.store.setClientRunId(scope, id, runId, clientRunId);
  }

  /** The session's run its client named `clientRunId`, with where it ended in the tree; null when there is none. */
  runByClientId(scope: Scope, id: string, clientRunId: string): Promise<ClientRunRecord | null> {
    return this.deps.store.runByClientId(scope, id, clientRunId);
  }

  async snapshot(scope: Scope, id: string): Promise<SessionSnapshot> {
    return (await this.liveSession(scope, id)).snapshot();
  }

  // Commands

  async prompt(scope: Scope, id: string, input: PromptInput): Promise<CommandResult> {
    const content = checkContent(input.content);
    if (input.ifBusy === 'enqueue' || input.ifBusy === 'interrupt' || input.ifBusy === 'rollback') {
      return this.queue.send(scope, id, input.ifBusy, {
        content,
        ...(input.maxSteps !== undefined ? { maxSteps: input.maxSteps } : {}),
      });
    }
    if (input.ifBusy !== 'steer')
      return this.start(scope, id, 'prompt', { content, maxSteps: input.maxSteps });
    // Staged only while a run is in flight; an idle session starts a run instead. Concurrent steers on an idle
    // session race for the start: exactly one wins, and each loser stages on the run it lost to (last wins).
    // A steered prompt opens another turn of the run (up to maxSteps more model calls): over a tokens or cost
    // quota it is refused like a prompt, so a run in flight cannot be fed forever past the quota.
    await this.deps.admission?.admit(scope, id, 'turn');
    for (let attempt = 0; ; attempt++) {
      const staged = await this.deps.store.stageSteer(scope, id, { content, maxSteps: input.maxSteps });
      if (staged) return { runId: staged.runId, staged: true };
      try {
        return await this.start(scope, id, 'prompt', { content, maxSteps: input.maxSteps });
      } catch (err) {
        const lostTheRace = err instanceof CanopyException && err.code === 'session_busy';
        if (!lostTheRace || attempt >= STEER_START_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * Regenerate (a user node, no content: a new reply as its child), edit (an assistant node and content: a new
   * user message and reply as its children), or a new root (null and content). Idle only.
   */
  async branch(scope: Scope, id: string, input: BranchInput, runId?: string): Promise<CommandResult> {
    const live = await this.liveSession(scope, id);
    requireIdle(live.status);
    const tree = await this.wholeTree(scope, id, live);
    const rollback = positionOf(tree);
    let content: Block[] | undefined;
    if (input.nodeId === null) {
      if (input.content === undefined)
        throw CanopyException.badRequest('a new root needs content', { field: 'content' });
      content = checkContent(input.content);
      tree.navigate(null);
    } else {
      const node = tree.getNode(input.nodeId);
      if (!node) throw CanopyException.notFound('node');
      if (input.content === undefined) {
        if (node.message.role !== 'user' || isToolResultMessage(node.message)) {
          throw new CanopyException('not_user_node', 'regenerating needs a user prompt node');
        }
      } else {
        if (node.message.role !== 'assistant') {
          throw new CanopyException('not_assistant_node', 'editing branches from an assistant node');
        }
        if (toolUses(node.message).length > 0) {
          // The model would see assistant(tool_use) -> user without the results: providers reject that.
          throw new CanopyException(
            'tool_use_node',
            'editing after an assistant message with tool uses would leave them without results: branch from the assistant message that answers them',
            { nodeId: input.nodeId },
          );
        }
        content = checkContent(input.content);
      }
      tree.navigate(input.nodeId);
    }
    return this.start(
      scope,
      id,
      'branch',
      { content, nodeId: input.nodeId, maxSteps: input.maxSteps },
      positionOf(tree),
      rollback,
      runId,
      this.viewNodes(live, tree),
    );
  }

  /** Moves the active path to a node and down to a tip (null clears the path). Idle only. */
  async navigate(scope: Scope, id: string, nodeId: NodeId | null): Promise<PositionRecord> {
    const live = await this.liveSession(scope, id);
    requireIdle(live.status);
    const tree = await this.wholeTree(scope, id, live);
    if (nodeId !== null && !tree.has(nodeId)) throw CanopyException.notFound('node');
    tree.navigate(nodeId).extend();
    const position = positionOf(tree);
    await this.deps.store.savePosition(scope, id, position);
    await this.publisher.publish(scope.tenantId, id, [
      { type: 'tree', data: { newNodes: [], nodes: this.viewNodes(live, tree), ...position } },
      { type: 'store', data: { ok: true, kind: 'tree' } },
    ]);
    return position;
  }

  /**
   * The stored session and its queued prompts, read in one transaction, the queue first (a read: the session is not
   * made live). not_found when the scope does not see it.
   */
  async getWithQueue(
    scope: Scope,
    id: string,
  ): Promise<{ record: SessionRecord; queued: QueuedPromptView[] }> {
    const found = await this.deps.store.getWithQueue(scope, id);
    if (!found) throw CanopyException.notFound('session');
    return { record: found.session, queued: found.queued.map(queuedPromptView) };
  }

  /** Takes a queued prompt out of the queue before its turn (not_found once its run started). */
  cancelQueued(scope: Scope, id: string, queueId: string): Promise<void> {
    return this.queue.cancel(scope, id, queueId);
  }

  /** Cancels the run in flight (busy or paused): `status` idle, then `cancelled`; nothing of it is committed. */
  async cancel(scope: Scope, id: string): Promise<CommandResult> {
    const session = await this.get(scope, id);
    const runId = session.activeRunId;
    if (session.status === 'idle' || !runId) throw new CanopyException('idle', 'no run to cancel');
    return this.cancelActive(scope, session, runId);
  }

  /**
   * Stops the session's run in flight if it is still `runId` (for a queued prompt: `interrupted` keeps what the run
   * had, `cancelled` keeps nothing); nothing otherwise.
   */
  private async cancelRun(scope: Scope, id: string, runId: string, reason: CancelReason): Promise<void> {
    const session = await this.get(scope, id);
    if (session.status === 'idle' || session.activeRunId !== runId) return;
    await this.cancelActive(scope, session, runId, reason).catch((err: unknown) => {
      // Ended meanwhile: nothing left to cancel.
      if (!(err instanceof CanopyException && err.code === 'idle')) throw err;
    });
  }

  private async cancelActive(
    scope: Scope,
    session: SessionRecord,
    runId: string,
    reason: CancelReason = 'cancelled',
  ): Promise<CommandResult> {
    const id = session.id;
    await this.liveSession(scope, id);
    const stopped =
      session.status === 'busy'
        ? await this.stopRun(runId, reason)
        : await this.executor.abort(runId, reason);
    if (stopped) return { runId };
    // Paused, or left behind by a dead process or not taken yet: nothing executes it, end it here (fenced: should
    // its executor still end it, only one of the two writes anything).
    const run = await this.deps.store.getRun(systemScope(scope.tenantId), runId);
    if (!run) throw new CanopyException('idle', 'no run to cancel');
    const pending = run.pending && isPendingState(run.pending) ? run.pending : null;
    // What it keeps goes after the head as it is now (read again: the session read above may be older).
    const current =
      reason === 'interrupted' ? await this.deps.store.get(systemScope(scope.tenantId), id) : null;
    await this.executor.endRun(
      systemScope(scope.tenantId),
      session,
      run,
      'cancelled',
      null,
      pending?.messages ?? [],
      pending?.runUsage ?? run.usage,
      false,
      current ? keptWithoutExecutor(current, run, pending) : undefined,
    );
    return { runId };
  }

  /** Records a decision for a paused run; when none is awaited any more, the run continues. */
  resume(scope: Scope, id: string, input: ResumeInput): Promise<CommandResult> {
    return this.decisions.resume(scope, id, input, () => this.liveSession(scope, id));
  }

  // Live

  async subscribe(
    scope: Scope,
    id: string,
    listener: (event: SessionEvent) => void,
    options: SubscribeOptions = {},
  ): Promise<Subscription> {
    const live = await this.liveSession(scope, id);
    return live.subscribe(listener, options);
  }

  /** Waits until the run completes, pauses, fails or is cancelled. */
  async waitForRun(scope: Scope, id: string, runId: string): Promise<RunResult> {
    const live = await this.liveSession(scope, id);
    return live.waitForRun(runId);
  }

  /** A run result as the API answers `wait: true` (a TurnResult: the run's messages, tool calls and results as one list, with the run's id and status). */
  toTurnResult(sessionId: string, result: RunResult): TurnResult {
    return TurnResult.fromMessages({
      sessionId,
      runId: result.runId,
      status: result.status,
      messages: result.messages,
      durationMs: result.durationMs,
      error: result.error,
      awaiting: result.awaiting,
    });
  }

  async getRun(scope: Scope, runId: string): Promise<RunRecord> {
    const run = await this.deps.store.getRun(scope, runId);
    if (!run) throw CanopyException.notFound('run');
    return run;
  }

  /**
   * The run, or the queued prompt whose run it will be while it waits (with its place in its session's queue).
   * not_found for neither: an id no prompt had, another tenant's or user's, or a queued prompt taken out of the
   * queue or dropped before its turn (it never ran).
   */
  async getRunOrQueued(
    scope: Scope,
    runId: string,
  ): Promise<{ run: RunRecord } | { queued: QueuedRunRecord }> {
    const found = await this.deps.store.getRunOrQueued(scope, runId);
    if (!found) throw CanopyException.notFound('run');
    return found;
  }

  // Internals

  /**
   * Stops a run executing here or in another process (its executor aborts it and ends it: status idle, cancelled,
   * rollback). False when nothing acknowledged: no process executes it.
   */
  async stopRun(runId: string, reason: string): Promise<boolean> {
    if (await this.executor.abort(runId, reason)) return true;
    const how: CancelReason = reason === 'interrupted' ? 'interrupted' : 'cancelled';
    return this.deps.control.requestCancel(runId, CANCEL_ACK_TIMEOUT_MS, how);
  }

  /**
   * A copy of the session's whole tree to move its path on: the live one when it holds the whole tree (a session
   * within LIVE_PATH_NODES), else read from the store.
   */
  private async wholeTree(scope: Scope, id: string, live: LiveSession): Promise<Tree> {
    if (live.holdsWholeTree) return live.tree.clone();
    return (await this.loadTree(scope, id)).tree;
  }

  /**
   * The nodes a live view needs of a path moved on a tree read from the store (the path's recent part and the
   * versions of its turns), sent with the `tree` event so that live views bounded to their recent part (this
   * service's, the SDK's) need not read them; none when the live session holds the whole tree (so do they).
   */
  private viewNodes(live: LiveSession, tree: Tree): TreeNode[] {
    if (live.holdsWholeTree) return [];
    const bound = this.deps.settings.livePathNodes ?? DEFAULT_LIVE_PATH_NODES;
    const path = tree.path.slice(Math.max(0, tree.path.length - bound));
    const { nodes } = liveViewOf(tree, path, tree.head);
    return [...nodes.values()].sort((a, b) => a.id - b.id);
  }

  /** The live session, opened if needed. The caller's scope decides visibility: the live session is shared. */
  async liveSession(scope: Scope, id: string): Promise<LiveSession> {
    const open = this.live.get(scope.tenantId, id);
    if (open) {
      if (scope.userId !== undefined && open.info.userId !== scope.userId)
        throw CanopyException.notFound('session');
      return open;
    }
    // A user's scope sees only that user's sessions: checked before anything is opened for it (probing another
    // user's ids makes nothing live). The tenant's scope sees every session the open can find: not read twice.
    if (scope.userId !== undefined) await this.get(scope, id);
    const live = await this.live.open(scope.tenantId, id);
    if (!live) throw CanopyException.notFound('session');
    return live;
  }

  private async start(
    scope: Scope,
    id: string,
    kind: RunKind,
    input: RunInput,
    position?: PositionRecord,
    rollback?: PositionRecord,
    queuedId?: string,
    viewNodes: TreeNode[] = [],
  ): Promise<CommandResult> {
    // Quotas first: a prompt over quota starts nothing (a resume continues a run already admitted). The runs
    // quotas are decided again by startRun, which counts the run against them as it records it.
    if (kind !== 'resume') await this.deps.admission?.admit(scope, id);
    const limit = this.deps.settings.maxBusyPerTenant;
    // startRun is scoped: an invisible session answers not_found here, before anything is opened or published.
    // It also applies the tenant's limit of runs in flight, counted in the database for every process, unless
    // the tenant was counted far below it a moment ago (BusyLimitGate).
    const count = this.busyGate?.mustCount(scope.tenantId) ?? false;
    const started = await this.deps.store.startRun(scope, {
      sessionId: id,
      kind,
      input: input as JsonObject,
      status: this.deps.queue.runsInline ? 'running' : 'queued',
      ...(position ? { position } : {}),
      ...(rollback ? { rollback } : {}),
      ...(count && limit !== undefined ? { maxBusy: limit } : {}),
      ...(queuedId !== undefined ? { runId: queuedId } : {}),
    });
    this.busyGate?.record(scope.tenantId, started.busy, started.ok);
    if (!started.ok) {
      if (started.reason === 'not_found') throw CanopyException.notFound('session');
      if (started.reason === 'quota_exceeded') throw quotaExceeded(started.quota);
      if (started.reason === 'rate_limited') {
        throw new CanopyException(
          'rate_limited',
          `too many runs in flight for this tenant (limit ${limit})`,
          {
            limit,
          },
        );
      }
      throw started.reason === 'busy'
        ? new CanopyException('session_busy', 'a run is in flight')
        : new CanopyException('session_paused', 'a run is waiting for a decision');
    }
    const runId = started.run.id;
    try {
      await this.announceAndEnqueue(scope, id, runId, kind, started, position, viewNodes);
    } catch (err) {
      // The run is in the database but nothing will take it (Redis did not answer): end it, rolling a branch
      // back, so the session is not left busy, and say the dependency failed.
      await this.executor
        .endRun(
          systemScope(scope.tenantId),
          { id },
          started.run,
          'error',
          { code: 'unavailable', message: 'the run could not be queued' },
          [],
          started.run.usage,
          false,
        )
        .catch((e: unknown) => this.deps.logger.warn('could not end a run that failed to start', { err: e }));
      throw err instanceof CanopyException
        ? err
        : CanopyException.unavailable('the run could not be queued', err);
    }
    return { runId };
  }

  private async announceAndEnqueue(
    scope: Scope,
    id: string,
    runId: string,
    kind: RunKind,
    started: { run: RunRecord; session: SessionRecord },
    position: PositionRecord | undefined,
    viewNodes: TreeNode[],
  ): Promise<void> {
    // Live before its first event, so waiters and subscribers see it all; opened from the claimed row and run.
    await this.live.open(scope.tenantId, id, { session: started.session, run: started.run });
    if (this.deps.queue.runsInline) this.executor.prepare(started.session, started.run);
    const events: SessionEventInput[] = [{ type: 'status', data: { status: 'busy', runId } }];
    // A branch moved the path (persisted with the run's start): `tree` then `store`, like every tree change.
    if (position) {
      events.push(
        { type: 'tree', data: { newNodes: [], nodes: viewNodes, ...position } },
        { type: 'store', data: { ok: true, kind: 'tree' } },
      );
    }
    await this.publisher.publish(scope.tenantId, id, events);
    await this.publisher.activity({
      tenantId: scope.tenantId,
      type: 'run_started',
      data: { id, runId, kind },
      at: Date.now(),
    });
    await this.deps.queue.enqueue({ tenantId: scope.tenantId, sessionId: id, runId });
  }
}

/**
 * What an interrupted run that no process executes keeps: a paused run its messages with its tool round closed;
 * one not taken yet, or whose process died, the prompt it was started with (what it did beyond its last commit
 * is lost with that process).
 */
function keptWithoutExecutor(session: SessionRecord, run: RunRecord, pending: PendingState | null): KeptWork {
  const position = {
    path: session.path,
    cursors: session.cursors,
    head: session.head,
    nextNodeId: session.nextNodeId,
  };
  if (pending) {
    return { messages: keptOnInterruptWhilePaused(pending), usage: pending.segmentUsage, position };
  }
  const content = (run.input as RunInput).content;
  const prompt = content === undefined ? [] : [userMessage(content, run.createdAt.getTime())];
  return { messages: keptOnInterrupt(prompt, null), usage: emptyUsage(), position };
}
