// Session commands with Omni.Session's semantics over a persisted tree: create / get / list / update / close /
// delete, prompt (with steering and the queue of prompt-queue.ts), branch (regenerate, edit, new root), navigate, cancel, resume, subscribe and
// wait. Status changes are compare-and-set in the store, so two commands racing for an idle session never both
// win; events follow every change, `status` first.

import {
  Tree,
  TurnResult,
  isToolResultMessage,
  systemScope,
  toolUses,
  type Block,
  type InFlight,
  type MessageContent,
  type NodeId,
  type RunKind,
  type Scope,
  type SessionEvent,
  type SessionEventInput,
  type SessionInfo,
  type SessionSnapshot,
} from '@canopy/core';
import { CanopyException } from '@canopy/common';
import { isPendingState } from '@canopy/agent';
import type {
  CreateSessionInput,
  FailedTurn,
  JsonObject,
  ListSessionsQuery,
  PositionRecord,
  RunRecord,
  SessionPage,
  SessionRecord,
  SessionStatePatch,
} from '@canopy/store';
import { toSessionInfo, positionOf } from './convert';
import { LiveSession, type SubscribeOptions, type Subscription } from './live-session';
import { LiveSessions } from './live-sessions';
import { RunExecutor, type RunInput } from './run-executor';
import type { RunResult } from './run-tracker';
import type { SessionEngineDeps } from './session-deps';
import { SessionPublisher } from './session-publisher';
import { reconcile, type StartOptions } from './reconcile';
import { Decisions, type ResumeInput } from './decisions';
import { RunRecovery } from './run-recovery';
import { checkContent, checkMockDelays, checkModel, checkTools, requireIdle } from './session-input';
import { PromptQueue } from './prompt-queue';

export type { ResumeInput } from './decisions';

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

export type OpenMode = 'controller' | 'observer';

export interface OpenResult {
  live: LiveSession;
  /** The session as stored after the open. */
  session: SessionRecord;
  /** `started`: the open made the session live; `existing`: it was live already (here or elsewhere). */
  opened: 'started' | 'existing';
  /** Where each reconciled field came from: the persisted state or the start options. */
  resolution: { model: 'persisted' | 'start'; system: 'persisted' | 'start'; opts: 'persisted' | 'start' };
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
  readonly live: LiveSessions;
  readonly executor: RunExecutor;
  readonly queue: PromptQueue;
  private readonly decisions: Decisions;
  private readonly recovery: RunRecovery;
  private readonly publisher: SessionPublisher;
  private readonly publishedListeners = new Set<(count: number) => void>();
  private retentionSweeper: (() => Promise<void>) | null = null;
  private lostRunSweep: NodeJS.Timeout | null = null;
  private sweeping = false;

  constructor(private readonly deps: SessionEngineDeps) {
    this.publisher = new SessionPublisher(deps.bus, deps.feed, deps.logger, (count) => {
      for (const listener of this.publishedListeners) listener(count);
    });
    this.live = new LiveSessions(deps, this.publisher);
    this.decisions = new Decisions(deps, this.publisher);
    this.executor = new RunExecutor(deps, this.publisher, this.live, this.decisions);
    this.recovery = new RunRecovery(deps, this.executor, this.decisions);
    this.queue = new PromptQueue(deps, this.publisher, {
      prompt: (scope, id, input, runId) =>
        this.start(scope, id, 'prompt', input, undefined, undefined, runId),
      branchAt: (scope, id, nodeId, input, runId) => this.branch(scope, id, { nodeId, ...input }, runId),
      cancelRun: (scope, id, runId) => this.cancelRun(scope, id, runId),
    });
    // A run that ends here starts the session's next queued prompt.
    this.executor.onRunFinished((tenantId, id) => this.queue.drainLater(tenantId, id));
    // Every process serves live sessions: a close decided anywhere ends them here too.
    deps.control.onClose(async (tenantId, id, reason) => {
      await this.live.close(tenantId, id, reason);
    });
    if (deps.settings.executesRuns) {
      deps.queue.process(
        (job) => this.executor.execute(job),
        (job, error) => this.giveUpRun(job.tenantId, job.sessionId, job.runId, error),
      );
      deps.control.onCancel((runId) => this.executor.abortIfHere(runId));
      deps.timers.process({
        'session-idle': (timer) => this.live.shutDownIfIdle(timer),
        'decision-expiry': (timer) => this.decisions.expire(timer),
        'retention-sweep': () => this.retentionSweeper?.() ?? Promise.resolve(),
      });
      this.scheduleRetentionSweep();
      const sweepMs = deps.settings.lostRunSweepMs;
      if (sweepMs) {
        this.lostRunSweep = setInterval(() => void this.sweepLostRuns(), sweepMs);
        this.lostRunSweep.unref();
      }
    }
  }

  private scheduleRetentionSweep(): void {
    if (!this.deps.settings.retentionSweepMs) return;
    this.deps.timers
      .repeat({ kind: 'retention-sweep' }, this.deps.settings.retentionSweepMs)
      .catch((err: unknown) => this.deps.logger.error('retention sweep not scheduled', { err }));
  }

  /** One pass of the lost-run sweep (see RunRecovery.requeueLostRuns); never throws. */
  async sweepLostRuns(): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    try {
      const requeued = await this.recovery.requeueLostRuns();
      // Queued prompts of sessions a dead process left idle without starting them.
      await this.queue.sweep();
      // The retention schedule lives in Redis too: set again (idempotent) when runs were lost with it.
      if (requeued > 0) this.scheduleRetentionSweep();
      return requeued;
    } catch (err) {
      this.deps.logger.warn('lost-run sweep failed', { err });
      return 0;
    } finally {
      this.sweeping = false;
    }
  }

  /** What the retention timer runs (the sweeper registers itself; it lives beside this service). */
  setRetentionSweeper(sweep: () => Promise<void>): void {
    this.retentionSweeper = sweep;
  }

  /** Tells `listener` how many events each publish carried (metrics); the returned function stops it. */
  onEventsPublished(listener: (count: number) => void): () => void {
    this.publishedListeners.add(listener);
    return () => void this.publishedListeners.delete(listener);
  }

  // Lifecycle

  /**
   * What a process that executes runs does at start-up: ends runs a dead process left behind, and sets again the
   * decision expiries of paused runs (embedded timers do not survive a restart).
   */
  recover(): Promise<{ interrupted: number; expiries: number }> {
    return this.recovery.recover();
  }

  /** Ends runs a dead process left behind (see RunRecovery); answers how many. */
  recoverInterruptedRuns(): Promise<number> {
    return this.recovery.recoverInterruptedRuns();
  }

  /** The queue gave up on a run: it ends as an error (see RunRecovery). */
  giveUpRun(tenantId: string, sessionId: string, runId: string, error: unknown): Promise<void> {
    return this.recovery.giveUpRun(tenantId, sessionId, runId, error);
  }

  /**
   * Stops this process's part. Embedded: every run here ends as cancelled (branches roll back). A worker stops
   * taking runs, lets the ones in flight finish for up to the grace period, then hands the rest back to the queue
   * for another worker. Then the live sessions here close.
   */
  async shutdown(): Promise<void> {
    if (this.lostRunSweep) clearInterval(this.lostRunSweep);
    if (this.deps.queue.runsInline) {
      await this.executor.abortAll('shutdown');
      await this.deps.queue.close();
    } else {
      await this.deps.queue.close(this.deps.settings.shutdownGraceMs, () => this.executor.handBackAll());
    }
    await this.deps.timers.close();
    await this.live.closeAll('shutdown');
  }

  // Sessions

  async create(scope: Scope, input: CreateSessionInput): Promise<SessionInfo> {
    await this.checkModelFor(scope, input.model);
    checkTools(this.deps.tools, input.tools ?? [], input.opts);
    checkMockDelays(input.opts);
    const record = await this.deps.store.create(scope, {
      ...input,
      userId: scope.userId ?? input.userId ?? null,
    });
    return toSessionInfo(record);
  }

  async get(scope: Scope, id: string): Promise<SessionRecord> {
    const record = await this.deps.store.get(scope, id);
    if (!record) throw CanopyException.notFound('session');
    return record;
  }

  /**
   * A session as a read shows it: its record, its subscribers and the run in flight. A read changes nothing: a
   * session that is not live in this process is described from the store and the event log through a transient
   * view (never registered, announced or kept), and its subscribers are counted across the deployment.
   */
  async describe(
    scope: Scope,
    id: string,
  ): Promise<{
    record: SessionRecord;
    live: { controllers: number; observers: number } | null;
    inFlight: InFlight | null;
  }> {
    const record = await this.get(scope, id);
    const local = this.live.get(scope.tenantId, id);
    // The record was read in the caller's scope: another user's session answered not_found already.
    if (local) {
      return {
        record,
        live: { controllers: local.controllers, observers: local.observers },
        inFlight: local.inFlight,
      };
    }
    const entry = await this.deps.registry.get(scope.tenantId, id).catch(() => null);
    const live = entry ? { controllers: entry.controllers, observers: entry.observers } : null;
    if (record.status === 'idle') return { record, live, inFlight: null };
    const view = await LiveSession.open(this.deps, scope.tenantId, id, {
      onIdle: () => undefined,
      onPresence: () => undefined,
    });
    if (!view) throw CanopyException.notFound('session');
    try {
      return { record, live, inFlight: view.inFlight };
    } finally {
      await view.close('described');
    }
  }

  list(scope: Scope, query: ListSessionsQuery): Promise<SessionPage> {
    if (scope.userId === undefined) return this.deps.store.list(scope, query);
    // A user sees only their own sessions: a filter naming someone else matches nothing (it is not replaced).
    if (query.userId !== undefined && query.userId !== scope.userId) {
      return Promise.resolve({ data: [], nextCursor: null });
    }
    return this.deps.store.list(scope, { ...query, userId: scope.userId });
  }

  /**
   * Changes title, model, system, opts, tools and metadata. Model, system, opts and tools are idle-only. A title
   * always broadcasts `title`; any other field broadcasts `state`; a write (`store`) happens only on change.
   */
  async update(scope: Scope, id: string, patch: SessionStatePatch): Promise<SessionInfo> {
    if (patch.model !== undefined) await this.checkModelFor(scope, patch.model);
    const current = await this.get(scope, id);
    if (patch.tools !== undefined || patch.opts !== undefined) {
      checkTools(this.deps.tools, patch.tools ?? current.tools, patch.opts ?? current.opts);
    }
    if (patch.opts !== undefined) checkMockDelays(patch.opts);
    const idleOnly =
      patch.model !== undefined ||
      patch.system !== undefined ||
      patch.opts !== undefined ||
      patch.tools !== undefined;
    const { session, changed } = await this.deps.store.updateState(scope, id, patch, { idleOnly });
    const events = [];
    if (patch.title !== undefined) events.push({ type: 'title' as const, data: { title: session.title } });
    const stateFields = ['model', 'system', 'opts', 'tools', 'metadata'] as const;
    if (stateFields.some((f) => patch[f] !== undefined)) {
      events.push({
        type: 'state' as const,
        data: {
          model: session.model,
          system: session.system,
          opts: session.opts,
          tools: session.tools,
          metadata: session.metadata,
        },
      });
    }
    if (changed) events.push({ type: 'store' as const, data: { ok: true as const, kind: 'state' as const } });
    await this.publisher.publish(scope.tenantId, id, events);
    return toSessionInfo(session);
  }

  /**
   * Stops the session being live on every instance (a run in flight is cancelled wherever it executes; stored data
   * untouched). Idempotent.
   */
  /**
   * Stops serving the session live everywhere. Never loses work: with a run in flight it answers session_busy
   * (cancel first, or close once the run ends); a paused run keeps waiting for its decision.
   */
  async close(scope: Scope, id: string): Promise<void> {
    const session = await this.get(scope, id);
    if (session.status === 'busy') {
      throw new CanopyException(
        'session_busy',
        'a run is in flight: close once it ends, or cancel it first',
        {
          runId: session.activeRunId,
        },
      );
    }
    await this.deps.control.closeEverywhere(scope.tenantId, id, 'close');
  }

  async delete(scope: Scope, id: string): Promise<void> {
    const session = await this.get(scope, id);
    if (session.status === 'busy' && session.activeRunId) await this.stopRun(session.activeRunId, 'deleted');
    await this.deps.control.closeEverywhere(scope.tenantId, id, 'delete');
    if (!(await this.deps.store.delete(scope, id))) throw CanopyException.notFound('session');
    await this.deps.bus.forget(scope.tenantId, id);
  }

  /**
   * Opens a stored session live (reconciling start options with its persisted state). A controller's start options are reconciled with the persisted
   * state by the load table (the persisted model wins while usable; system and opts from the start options win)
   * and the result persisted through `update` (a `state` event reports it; idle-only when something is given);
   * an observer opens it as it is. `opened`: whether it was live anywhere in the deployment before.
   */
  async open(
    scope: Scope,
    id: string,
    start: StartOptions = {},
    mode: OpenMode = 'controller',
  ): Promise<OpenResult> {
    const session = await this.get(scope, id);
    const wasLive =
      this.live.get(scope.tenantId, id) !== undefined ||
      (await this.deps.registry.get(scope.tenantId, id).catch(() => null)) !== null;
    let resolution: OpenResult['resolution'] = { model: 'persisted', system: 'persisted', opts: 'persisted' };
    if (mode === 'controller') {
      const context = await this.modelContext(scope, [session.model, start.model]);
      const resolved = reconcile(session, start, (m) => this.deps.gateway.check(m, context) === null);
      resolution = {
        model: resolved.model === session.model ? 'persisted' : 'start',
        system: start.system !== undefined ? 'start' : 'persisted',
        opts: start.opts !== undefined ? 'start' : 'persisted',
      };
      const patch: SessionStatePatch = {};
      if (resolved.model !== session.model) patch.model = resolved.model;
      if (start.system !== undefined) patch.system = resolved.system;
      if (start.opts !== undefined) patch.opts = resolved.opts;
      if (start.tools !== undefined) patch.tools = resolved.tools;
      if (Object.keys(patch).length > 0) await this.update(scope, id, patch);
    }
    const live = await this.liveSession(scope, id);
    return {
      live,
      session: await this.get(scope, id),
      opened: wasLive ? 'existing' : 'started',
      resolution,
    };
  }

  // Tree

  async tree(
    scope: Scope,
    id: string,
  ): Promise<SessionSnapshot['tree'] & { roots: NodeId[]; usage: ReturnType<LiveSession['tree']['usage']> }> {
    const live = await this.liveSession(scope, id);
    const tree = live.tree;
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

  /** The turns of the session whose latest regeneration failed, with the error (GET …/turns marks them). */
  failedTurns(scope: Scope, id: string): Promise<FailedTurn[]> {
    return this.deps.store.failedTurns(scope, id);
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
    const tree = live.tree.clone();
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
    );
  }

  /** Moves the active path to a node and down to a tip (null clears the path). Idle only. */
  async navigate(scope: Scope, id: string, nodeId: NodeId | null): Promise<PositionRecord> {
    const live = await this.liveSession(scope, id);
    requireIdle(live.status);
    const tree = live.tree.clone();
    if (nodeId !== null && !tree.has(nodeId)) throw CanopyException.notFound('node');
    tree.navigate(nodeId).extend();
    const position = positionOf(tree);
    await this.deps.store.savePosition(scope, id, position);
    await this.publisher.publish(scope.tenantId, id, [
      { type: 'tree', data: { newNodes: [], nodes: [], ...position } },
      { type: 'store', data: { ok: true, kind: 'tree' } },
    ]);
    return position;
  }

  /** Cancels the run in flight (busy or paused): `status` idle, then `cancelled`; nothing of it is committed. */
  async cancel(scope: Scope, id: string): Promise<CommandResult> {
    const session = await this.get(scope, id);
    const runId = session.activeRunId;
    if (session.status === 'idle' || !runId) throw new CanopyException('idle', 'no run to cancel');
    return this.cancelActive(scope, session, runId);
  }

  /** Cancels the session's run in flight if it is still `runId` (an interrupting prompt's; nothing otherwise). */
  private async cancelRun(scope: Scope, id: string, runId: string): Promise<void> {
    const session = await this.get(scope, id);
    if (session.status === 'idle' || session.activeRunId !== runId) return;
    await this.cancelActive(scope, session, runId).catch((err: unknown) => {
      // Ended meanwhile: nothing left to cancel.
      if (!(err instanceof CanopyException && err.code === 'idle')) throw err;
    });
  }

  private async cancelActive(scope: Scope, session: SessionRecord, runId: string): Promise<CommandResult> {
    const id = session.id;
    await this.liveSession(scope, id);
    const stopped =
      session.status === 'busy'
        ? await this.stopRun(runId, 'cancelled')
        : await this.executor.abort(runId, 'cancelled');
    if (stopped) return { runId };
    // Paused, or left behind by a dead process or not taken yet: nothing executes it, end it here.
    const run = await this.deps.store.getRun(systemScope(scope.tenantId), runId);
    if (!run) throw new CanopyException('idle', 'no run to cancel');
    const pending = run.pending && isPendingState(run.pending) ? run.pending : null;
    await this.executor.endRun(
      systemScope(scope.tenantId),
      session,
      run,
      'cancelled',
      null,
      pending?.messages ?? [],
      pending?.runUsage ?? run.usage,
      false,
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
      error: result.error?.message ?? null,
      awaiting: result.awaiting,
    });
  }

  async getRun(scope: Scope, runId: string): Promise<RunRecord> {
    const run = await this.deps.store.getRun(scope, runId);
    if (!run) throw CanopyException.notFound('run');
    return run;
  }

  // Internals

  /** checkModel, with the tenant's own provider keys counted (looked up only when the deployment's fall short). */
  private async checkModelFor(scope: Scope, model: string): Promise<void> {
    checkModel(this.deps.gateway, model, await this.modelContext(scope, [model]));
  }

  private async modelContext(scope: Scope, models: Array<string | undefined>) {
    const needed = models.some((m) => m !== undefined && this.deps.gateway.check(m) !== null);
    if (!needed || !this.deps.providerKeys) return undefined;
    return { tenantProviders: await this.deps.providerKeys.providersOf(scope.tenantId) };
  }

  /**
   * Stops a run executing here or in another process (its executor aborts it and ends it: status idle, cancelled,
   * rollback). False when nothing acknowledged: no process executes it.
   */
  private async stopRun(runId: string, reason: string): Promise<boolean> {
    if (await this.executor.abort(runId, reason)) return true;
    return this.deps.control.requestCancel(runId, CANCEL_ACK_TIMEOUT_MS);
  }

  /** The live session, opened if needed. The caller's scope decides visibility: the live session is shared. */
  private async liveSession(scope: Scope, id: string): Promise<LiveSession> {
    const open = this.live.get(scope.tenantId, id);
    if (open) {
      if (scope.userId !== undefined && open.info.userId !== scope.userId)
        throw CanopyException.notFound('session');
      return open;
    }
    await this.get(scope, id);
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
  ): Promise<CommandResult> {
    // Quotas first: a prompt over quota starts nothing (a resume continues a run already admitted).
    if (kind !== 'resume') await this.deps.admission?.admit(scope, id);
    const limit = this.deps.settings.maxBusyPerTenant;
    // startRun is scoped: an invisible session answers not_found here, before anything is opened or published.
    // It also applies the tenant's limit of runs in flight, counted in the database for every process.
    const started = await this.deps.store.startRun(scope, {
      sessionId: id,
      kind,
      input: input as JsonObject,
      status: this.deps.queue.runsInline ? 'running' : 'queued',
      ...(position ? { position } : {}),
      ...(rollback ? { rollback } : {}),
      ...(limit !== undefined ? { maxBusy: limit } : {}),
      ...(queuedId !== undefined ? { runId: queuedId } : {}),
    });
    if (!started.ok) {
      if (started.reason === 'not_found') throw CanopyException.notFound('session');
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
      await this.announceAndEnqueue(scope, id, runId, kind, started, position);
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
  ): Promise<void> {
    // Live before its first event, so waiters and subscribers see it all; opened from the claimed row and run.
    await this.live.open(scope.tenantId, id, { session: started.session, run: started.run });
    if (this.deps.queue.runsInline) this.executor.prepare(started.session, started.run);
    const events: SessionEventInput[] = [{ type: 'status', data: { status: 'busy', runId } }];
    // A branch moved the path (persisted with the run's start): `tree` then `store`, like every tree change.
    if (position) {
      events.push(
        { type: 'tree', data: { newNodes: [], nodes: [], ...position } },
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
