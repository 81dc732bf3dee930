// Executes runs taken from the turn queue: loads the session's committed state, drives the turn runner, and
// turns its commit points into fenced store writes followed by their events, in the contract's order:
// [status idle] -> turn -> tree {newNodes} -> store. A cancelled or failed run commits nothing more; if it never
// committed, a branch's path is rolled back: [status idle] -> cancelled|error -> tree (restored) -> store. A run
// interrupted by a newer prompt (`ifBusy: "interrupt"`) ends cancelled but commits what it had (see the agent's
// interrupted.ts), with the commit's events: [status idle] -> turn {reason: "interrupted"} -> tree -> store.

import {
  emptyUsage,
  isTurnBoundary,
  messageText,
  parseActor,
  scopeOfActor,
  systemScope,
  userMessage,
  type Message,
  type MessageContent,
  type NodeId,
  type Scope,
  type SessionEventInput,
  type TreeNode,
  type Usage,
  type RunError,
  type ContextMeter,
  type ContextSummary,
} from '@canopy/core';
import {
  RunFencedError,
  isPendingState,
  contextPolicyOf,
  modelLimits,
  runTurn,
  tokenCounterFor,
  type ModelLimits,
  type CommitRequest,
  type PendingState,
  type RunIO,
  type RunOutcome,
  type RunSpec,
} from '@canopy/agent';
import type { Span } from '@opentelemetry/api';
import { DeltaCoalescer } from '@canopy/realtime';
import { RunHandedBack, type RunJob } from '@canopy/queue';
import type {
  CommitInput,
  CommitResult,
  NewNode,
  PathLoad,
  PathPart,
  PositionRecord,
  RunContext,
  RunRecord,
  ContextSummaryStore,
  RunStore,
  SessionRecord,
  SessionRecordStore,
} from '@canopy/store';
import type { SessionEngineDeps } from './session-deps';

/** What the executor uses: the session and its runs, the model gateway, tools and hooks. */

/** No deployment entries: the built-in table alone. */
const NO_CONFIGURED_LIMITS = new Map<string, never>();
export type RunExecutorDeps = Pick<
  SessionEngineDeps,
  'gateway' | 'tools' | 'hooks' | 'logger' | 'tenantTelemetry'
> & {
  store: Pick<SessionRecordStore, 'get' | 'loadTree' | 'updateState' | 'saveContextMeter'> &
    Pick<RunStore, 'commit' | 'endRun' | 'getRun' | 'loadRun' | 'pathTail' | 'pauseRun'> &
    ContextSummaryStore;
  settings: Pick<
    SessionEngineDeps['settings'],
    'coalesceMs' | 'maxSteps' | 'retry' | 'toolTimeoutMs' | 'modelLimits'
  >;
};
import type { SessionPublisher } from './session-publisher';
import type { LiveSessionHost } from './live-session-host';
import type { Decisions } from './decisions';
import { heuristicTitle } from './title';
import { enabledServerTools } from './session-input';
import { actingScope, type ActingScope } from './acting-scope';
import { contextMeterOfPath, meterAfterRun } from './context-meter';
import { describeRun, endOfRun, traceCommit, traceRun } from './run-tracing';

/** What a run's input holds, by kind (runs.input). */
export interface RunInput {
  /** prompt and edit/new-root branches: the new user message's content. */
  content?: MessageContent;
  /** branch: the node branched from (null for a new root). */
  nodeId?: NodeId | null;
  maxSteps?: number;
}

/**
 * A run's store writes (commit, pause, end) that find the database unavailable are tried again: after these waits,
 * then every STORE_RETRY_EVERY_MS until STORE_RETRY_MS have passed since the first attempt. Long enough to outlast
 * a restart of the embedded database or of Postgres: the run's work is committed once it is back, instead of being
 * lost with the run.
 */
const COMMIT_RETRY_DELAYS_MS = [100, 400, 1_200];
/**
 * A path longer than this is not read whole for a run: the run reads what its context policy will send of it
 * (pathTail), so a run's cost stays flat however long the conversation grows.
 */
export const LONG_PATH_NODES = 200;
/** A whole path longer than this is read this many nodes a statement (readWholePath). */
const WHOLE_PATH_CHUNK = 2_000;
/** The reads of a long path a run makes at most (the first, and the reads on when estimates overcounted). */
const MAX_PATH_READS = 4;
const STORE_RETRY_EVERY_MS = 1_000;
const STORE_RETRY_MS = 30_000;

/** The abort reason of a run a newer prompt interrupted: it ends keeping what it had. */
export class RunInterrupted extends Error {
  constructor() {
    super('interrupted by a newer prompt');
    this.name = 'RunInterrupted';
  }
}

/** What an interrupted run keeps, and where it goes: after the session's head as the run last saw it. */
export interface KeptWork {
  messages: Message[];
  /** Usage of the kept messages (the session's total grows by it). */
  usage: Usage;
  position: Pick<RunPosition, 'path' | 'cursors' | 'head' | 'nextNodeId'>;
}

/** The session's position as the run moves it (from the loaded state, advanced by each commit). */
interface RunPosition {
  path: NodeId[];
  cursors: Record<string, NodeId>;
  head: NodeId | null;
  nextNodeId: NodeId;
  committed: boolean;
  /** The first prompt this run committed (titles an untitled session). */
  firstPrompt: Message | null;
  /** Whether the run's last commit carried a title for the untitled session (taken or not). */
  titleSent: boolean;
  /** Whether the commit that ended the run found prompts waiting in the session's queue. */
  queueWaiting: boolean;
  /** The token meter the run's last commit kept with the session (null: none, the meter is saved on its own). */
  meterKept: ContextMeter | null;
  /**
   * What the run read of the path (all of it, or what its policy sends of a long one) and the nodes it committed
   * since, in path order: the token meter after its last commit is counted from them.
   */
  context: Array<{ id: NodeId; message: Message }>;
  /** The context summaries the run knows of on its path (read, or written by the run). */
  summaries: ContextSummary[];
  /** The calibration of the session's token counts (ContextMeter.calibration) as the run leaves it. */
  calibration: number | undefined;
  /**
   * When this execution saw the run's first output (a text, thinking or tool-use token; Date.now()), null before;
   * undefined for a resumed run, whose wait for a decision is no part of a time to first token.
   */
  firstOutputAt?: number | null;
}

export class RunExecutor {
  private readonly running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  /** Runs started in this process for the inline queue: their context, so execution needs no reload. */
  private readonly started = new Map<string, { session: SessionRecord; run: RunRecord }>();
  /** Told when a run ended here and its session is idle again (the prompt queue starts its next one). */
  private finishedListener: ((tenantId: string, sessionId: string) => void) | null = null;

  constructor(
    private readonly deps: RunExecutorDeps,
    private readonly publisher: SessionPublisher,
    private readonly live: LiveSessionHost,
    private readonly decisions: Decisions,
  ) {}

  /**
   * Hands over what startRun returned for a run the inline queue executes here, sparing the executor a
   * database round trip. Runs without it (resumed, recovered, or taken by another process) load their context.
   */
  onRunFinished(listener: (tenantId: string, sessionId: string) => void): void {
    this.finishedListener = listener;
  }

  prepare(session: SessionRecord, run: RunRecord): void {
    this.started.set(run.id, { session, run });
  }

  isRunning(runId: string): boolean {
    return this.running.has(runId);
  }

  get activeRuns(): number {
    return this.running.size;
  }

  /** Aborts a run executing here; resolves once it has settled (its cancellation committed and published). */
  async abort(runId: string, reason: string = 'cancelled'): Promise<boolean> {
    const entry = this.running.get(runId);
    if (!entry) return false;
    entry.controller.abort(abortReason(reason));
    await entry.done;
    return true;
  }

  /** Starts aborting a run if this process executes it; true when it does (the abort settles on its own). */
  abortIfHere(runId: string, reason: string = 'cancelled'): boolean {
    const entry = this.running.get(runId);
    if (!entry) return false;
    entry.controller.abort(abortReason(reason));
    return true;
  }

  /** Aborts every run here and waits for them (shutdown). */
  async abortAll(reason: string): Promise<void> {
    await Promise.all([...this.running.keys()].map((id) => this.abort(id, reason)));
  }

  /**
   * Stops every run here without ending it (a worker shutting down past its grace period): each execution stops
   * writing and throws RunHandedBack, so the queue gives the run to another worker, which re-runs it from its last
   * commit. Resolves once they have all stopped.
   */
  async handBackAll(): Promise<void> {
    await Promise.all(
      [...this.running.entries()].map(async ([runId, entry]) => {
        entry.controller.abort(new RunHandedBack(runId));
        await entry.done;
      }),
    );
  }

  async execute(job: RunJob): Promise<void> {
    // A resume can arrive while the execution that paused is still winding down here: it continues after it.
    const previous = this.running.get(job.runId);
    if (previous) await previous.done;
    if (this.running.has(job.runId)) return;
    const controller = new AbortController();
    let finish!: () => void;
    const done = new Promise<void>((r) => (finish = r));
    this.running.set(job.runId, { controller, done });
    this.live.runHere(job.tenantId, job.sessionId, job.runId, true);
    try {
      await traceRun(job, (span) => this.executeOwned(job, controller, span));
    } finally {
      this.running.delete(job.runId);
      this.live.runHere(job.tenantId, job.sessionId, job.runId, false);
      finish();
    }
  }

  private async executeOwned(job: RunJob, controller: AbortController, span: Span): Promise<void> {
    // The store is written under the system scope (the run owns the session whoever acts it); hooks and tools
    // get the acting caller's scope (acting-scope.ts).
    const scope = systemScope(job.tenantId);
    const context =
      this.preparedContext(job) ??
      (await this.deps.store.loadRun(scope, job.sessionId, job.runId, LONG_PATH_NODES));
    if (!context) return; // superseded or already ended: nothing to do
    const leaveWorkerPresence = this.live.workerPresence(context.session);
    try {
      await this.executeLoaded(scope, job, context, controller, span);
    } finally {
      await leaveWorkerPresence();
    }
  }

  private async executeLoaded(
    scope: Scope,
    job: RunJob,
    loaded: RunContext,
    controller: AbortController,
    span: Span,
  ): Promise<void> {
    const { session, run } = loaded;
    let { pathNodes, pathTokens } = loaded;
    if (pathNodes === null) {
      // A long path: what the context policy sends of it, read by walking it from its ends.
      const part = await this.readPath(scope, session);
      pathNodes = part.nodes;
      pathTokens = part.tokens;
    }
    const position: RunPosition = {
      path: [...session.path],
      cursors: { ...session.cursors },
      head: session.head,
      nextNodeId: session.nextNodeId,
      committed: false,
      firstPrompt: null,
      titleSent: false,
      queueWaiting: false,
      meterKept: null,
      context: pathNodes.map((n) => ({ id: n.id, message: n.message })),
      summaries: [],
      calibration: session.contextMeter?.calibration,
    };
    const acting = actingScope(scope.tenantId, run);
    await describeRun(span, session, run, acting.scope, this.deps.tenantTelemetry);
    const spec = this.specFor(acting, session, run, pathNodes, controller.signal);
    if (!spec) {
      const error = { code: 'bad_request', message: 'the run has no valid input' };
      await this.endRun(scope, session, run, 'error', error, [], emptyUsage(), false);
      return;
    }
    if (contextPolicyOf(session.opts).strategy === 'summarize') {
      // The summaries stored against the path's nodes: the run sends the nearest one instead of what it covers.
      // Without them the run summarizes again (a summary stored already stays: the first one wins).
      spec.summaries = await this.deps.store
        .summariesOn(scope, session.id, spec.historyNodeIds ?? [])
        .catch((err: unknown) => {
          this.deps.logger.warn('could not read the context summaries of a session', {
            err,
            sessionId: session.id,
          });
          return [];
        });
      position.summaries = [...spec.summaries];
    }
    if (pathTokens) spec.historyTokens = pathTokens;
    if (position.calibration !== undefined) spec.calibration = position.calibration;
    const coalescer = new DeltaCoalescer({
      windowMs: this.deps.settings.coalesceMs,
      flush: (events) => this.publisher.publish(job.tenantId, job.sessionId, events),
    });
    // The node each message of the run takes when committed: the next free ids, in order (a paused run's
    // restored messages come first), so a result names a message the same before and after its commit.
    if (spec.start.type !== 'resume') position.firstOutputAt = null;
    let uncommitted = spec.start.type === 'resume' ? spec.start.pending.messages.length : 0;
    const io: RunIO = {
      emit: (event) => {
        if (
          position.firstOutputAt === null &&
          (event.type === 'text_delta' || event.type === 'thinking_delta' || event.type === 'tool_use_start')
        )
          position.firstOutputAt = Date.now();
        if (event.type === 'message') {
          event = { ...event, data: { ...event.data, nodeId: position.nextNodeId + uncommitted++ } };
        }
        coalescer.push(event);
      },
      commit: async (request) => {
        await coalescer.flush();
        const steer = await traceCommit(request.messages.length, request.stop === 'stop', () =>
          this.commit(scope, session, run, position, request),
        );
        uncommitted = 0;
        return steer;
      },
      pause: async (state) => {
        await coalescer.flush();
        await this.pause(scope, session, run, state);
      },
      saveSummary: async (summary) => {
        await this.deps.store.saveSummary(scope, { sessionId: session.id, ...summary });
        position.summaries.push(summary);
      },
      calibrated: (factor) => {
        position.calibration = factor;
      },
    };

    let outcome: RunOutcome;
    try {
      outcome = await runTurn(spec, io, {
        gateway: this.deps.gateway,
        tools: this.deps.tools,
        hooks: this.deps.hooks,
        toolTimeoutMs: this.deps.settings.toolTimeoutMs,
        retry: this.deps.settings.retry,
        limits: (model, opts) => this.limitsOf(model, opts),
      });
    } finally {
      await coalescer.close();
    }
    endOfRun(span, outcome);

    switch (outcome.status) {
      case 'completed':
        await this.afterCompleted(scope, session, run, position, outcome.usage);
        break;
      case 'cancelled':
        // Handed back, not cancelled: the run stays as it is for the next worker.
        if (controller.signal.reason instanceof RunHandedBack) throw controller.signal.reason;
        await this.endRun(
          scope,
          session,
          run,
          'cancelled',
          null,
          outcome.partial,
          outcome.usage,
          position.committed,
          controller.signal.reason instanceof RunInterrupted
            ? { messages: outcome.kept, usage: outcome.keptUsage, position }
            : undefined,
          { session, position },
        );
        break;
      case 'error':
        await this.endRun(
          scope,
          session,
          run,
          'error',
          {
            code: outcome.code,
            message: outcome.message,
            ...(outcome.details ? { details: outcome.details } : {}),
          },
          outcome.partial,
          outcome.usage,
          position.committed,
          undefined,
          { session, position },
        );
        break;
      case 'paused':
      case 'fenced':
        break;
    }
  }

  /**
   * The context of a run started here: the session and run as startRun left them (its compare-and-set made them
   * current), and the path's messages from the live tree — committed messages never change, so any copy will do.
   * Null when the run was not started here (then the store takes it).
   */
  private preparedContext(job: RunJob): RunContext | null {
    const prepared = this.started.get(job.runId);
    if (!prepared) return null;
    this.started.delete(job.runId);
    // A long path, or one the live session here does not hold whole (it keeps the path's recent part), is read as
    // the run will send it (pathTail): the run is this process's already, nothing to take again.
    const unread = { ...prepared, pathNodes: null };
    if (prepared.session.path.length > LONG_PATH_NODES) return unread;
    const tree = this.live.get(job.tenantId, job.sessionId)?.tree;
    if (!tree) return unread;
    const pathNodes: TreeNode[] = [];
    for (const id of prepared.session.path) {
      const node = tree.getNode(id);
      if (!node) return unread;
      pathNodes.push(node);
    }
    return { ...prepared, pathNodes };
  }

  /**
   * The meter of the path a finishing commit leaves: counted from what the run read of the path and the nodes it
   * committed (the commit's own included), with the summaries it knows of; never from the whole path or a live tree,
   * so it costs the same on every runtime however long the conversation. Null when it cannot be counted.
   */
  private meterAfterCommit(
    session: SessionRecord,
    position: RunPosition,
    nodes: readonly NewNode[],
  ): ContextMeter | null {
    try {
      const meter = contextMeterOfPath({
        path: [...position.context, ...nodes.map((n) => ({ id: n.id, message: n.message }))],
        session,
        tools: this.deps.tools,
        ...(this.deps.settings.modelLimits ? { modelLimits: this.deps.settings.modelLimits } : {}),
        ...(contextPolicyOf(session.opts).strategy === 'summarize' ? { summaries: position.summaries } : {}),
      });
      return position.calibration === undefined ? meter : { ...meter, calibration: position.calibration };
    } catch (err) {
      // A meter is not worth failing a commit for: the run's end saves one on its own instead.
      this.deps.logger.warn('context meter not counted', { err, sessionId: session.id });
      return null;
    }
  }

  /** The window and output limit of a session's model (the built-in table, MODEL_LIMITS, a mock's opts). */
  private limitsOf(model: string, opts: Record<string, unknown>): ModelLimits {
    return modelLimits(model, opts, this.deps.settings.modelLimits ?? NO_CONFIGURED_LIMITS);
  }

  /**
   * What a run reads of a long path: under `truncate` and `summarize`, the tail a window holds (back to a turn's
   * start; for summarize, no further back than the nearest summary) and the kept first turns; the whole path when the
   * policy sends everything or the window is not known.
   */
  private pathLoad(session: SessionRecord): PathLoad {
    const policy = contextPolicyOf(session.opts);
    const window =
      policy.strategy === 'none' ? null : this.limitsOf(session.model, session.opts).contextWindow;
    if (window === null) return { tailTokens: null, headTurns: 0, fromSummary: false };
    return {
      tailTokens: window,
      headTurns: policy.strategy === 'truncate' ? (policy.keepFirstTurns ?? 0) : 0,
      fromSummary: policy.strategy === 'summarize',
    };
  }

  /**
   * What a run reads of a long path (pathLoad). The stored counts are what the walk goes by, and a node stored without
   * one (an imported one) is estimated from its length, which may count more than the model's tokenizer does: when
   * the tail read counts fewer tokens than the window as the run counts them, while the walk had gone by its budget
   * (not stopped by the path's start), the path before it is read on for what is missing, a few times at most.
   */
  private async readPath(scope: Scope, session: SessionRecord): Promise<PathPart> {
    const load = this.pathLoad(session);
    if (load.tailTokens === null && session.path.length > WHOLE_PATH_CHUNK)
      return this.readWholePath(scope, session);
    // The path as the session row holds it (the run's: its session is busy), not sent as a parameter of 10,000 ids.
    let part = await this.deps.store.pathTail(scope, session.id, null, load);
    if (load.tailTokens === null || load.fromSummary) return part;
    const counter = tokenCounterFor(session.model);
    for (let reads = 1; reads < MAX_PATH_READS; reads++) {
      // The tail: the part's last nodes at consecutive places up to the head (the kept first turns come before it).
      let from = part.positions.length - 1;
      while (from > 0 && part.positions[from - 1] === part.positions[from]! - 1) from--;
      const tail = part.positions.slice(from);
      let walked = 0;
      let counted = 0;
      for (let i = from; i < part.nodes.length; i++) {
        walked += part.counted[i] ?? 0;
        counted += part.tokens[i] ?? counter.message(part.nodes[i]!.message);
      }
      const start = tail[0] ?? 0;
      if (walked <= load.tailTokens || counted >= load.tailTokens || start === 0) return part;
      // Read on before the tail, in the walk's units: what is missing, at the rate the walk overcounted.
      const missing = Math.ceil(((load.tailTokens - counted) * walked) / Math.max(counted, 1));
      const before = await this.deps.store.pathTail(scope, session.id, session.path.slice(0, start), {
        tailTokens: missing,
        headTurns: 0,
        fromSummary: false,
      });
      // In path order: the kept first turns not read again, what was read before the tail, the tail.
      const readFrom = before.positions[0] ?? start;
      part = concatParts([
        partWhere(part, (position, i) => i < from && position < readFrom),
        before,
        partWhere(part, (_, i) => i >= from),
      ]);
    }
    return part;
  }

  /**
   * A whole long path (the policy sends everything, or the window is not known), read WHOLE_PATH_CHUNK nodes a
   * statement: on the embedded database one statement holds every other query up while it runs, and one of 100,000
   * nodes held it long enough, on a loaded machine, for its supervisor to take it for hung.
   */
  private async readWholePath(scope: Scope, session: SessionRecord): Promise<PathPart> {
    const parts: PathPart[] = [];
    for (let from = 0; from < session.path.length; from += WHOLE_PATH_CHUNK) {
      const part = await this.deps.store.pathTail(
        scope,
        session.id,
        session.path.slice(from, from + WHOLE_PATH_CHUNK),
        { tailTokens: null, headTurns: 0, fromSummary: false },
      );
      parts.push({ ...part, positions: part.positions.map((p) => p + from) });
    }
    return concatParts(parts);
  }

  /**
   * The messages' token counts kept with their nodes: as the run counts them for the session's model (an estimate,
   * four characters a token, when its window is not known: nothing is at stake then).
   */
  private withTokens(session: SessionRecord, nodes: NewNode[]): NewNode[] {
    const estimate = this.limitsOf(session.model, session.opts).contextWindow === null;
    const counter = tokenCounterFor(session.model, { estimate });
    return nodes.map((n) => ({ ...n, tokens: counter.message(n.message) }));
  }

  /** Builds what the runner needs from the run's kind and input; null when the input is unusable. */
  private specFor(
    acting: ActingScope,
    session: SessionRecord,
    run: RunRecord,
    pathNodes: TreeNode[],
    signal: AbortSignal,
  ): RunSpec | null {
    const input = run.input as RunInput;
    const serverTools = enabledServerTools(session.opts);
    let start: RunSpec['start'];
    let maxSteps = Math.min(input.maxSteps ?? this.deps.settings.maxSteps, this.deps.settings.maxSteps);
    if (run.pending && isPendingState(run.pending)) {
      start = { type: 'resume', pending: run.pending };
      maxSteps = run.pending.maxSteps;
    } else if (run.kind === 'resume') {
      return null;
    } else if (input.content !== undefined) {
      start = { type: 'prompt', message: userMessage(input.content) };
    } else {
      // A regeneration: the path ends with the user message to answer again.
      const head = pathNodes[pathNodes.length - 1]?.message;
      if (!head || !isTurnBoundary(head)) return null;
      start = { type: 'continue' };
    }
    return {
      scope: acting.scope,
      callerScopes: acting.callerScopes,
      sessionId: session.id,
      runId: run.id,
      model: session.model,
      system: session.system,
      opts: session.opts,
      clientTools: session.tools,
      serverTools,
      maxSteps,
      history: pathNodes.map((n) => n.message),
      historyNodeIds: pathNodes.map((n) => n.id),
      start,
      signal,
    };
  }

  /** Appends the messages as a chain under the head, commits (fenced), then publishes the commit's events. */
  private async commit(
    scope: Scope,
    session: SessionRecord,
    run: RunRecord,
    position: RunPosition,
    request: CommitRequest,
  ): Promise<{ message: Message; scope?: Scope } | null> {
    const chain = chainOf({ messages: request.messages, usage: request.usage, position });
    const { position: stored, nextNodeId: next } = chain;
    const nodes = this.withTokens(session, chain.nodes);
    const { path, cursors, head } = stored;
    const stop = request.stop === 'stop';
    // A session untitled when the run started with an empty tree takes its title from the first prompt this run
    // committed, in the commit that ends the run (no transaction of its own).
    const titleFrom =
      stop && session.title === null && session.nextNodeId === 1
        ? (position.firstPrompt ?? request.messages.find(isTitledPrompt) ?? null)
        : null;
    const title = titleFrom ? heuristicTitle(messageText(titleFrom)) : null;
    // The token meter of the head this commit leaves, kept by the same statement when the run ends here.
    const meter = stop ? this.meterAfterCommit(session, position, nodes) : null;
    const input: CommitInput = {
      sessionId: session.id,
      runId: run.id,
      nodes,
      position: stored,
      // What the session row holds: read at the run's start, or written by its last commit.
      storedPath: position.path,
      nextNodeId: next,
      usage: request.usage,
      ...(stop
        ? {
            finish: {
              usage: request.runUsage,
              // From the run's creation (its wait in the queue included): the time to first token its user saw.
              ...(typeof position.firstOutputAt === 'number'
                ? { firstOutputMs: position.firstOutputAt - run.createdAt.getTime() }
                : {}),
            },
          }
        : {}),
      ...(title ? { title } : {}),
      ...(meter ? { contextMeter: meter } : {}),
    };
    // An attempt that failed for the database's absence may have committed all the same (its answer lost).
    let inDoubt = false;
    let result: CommitResult;
    try {
      result = await this.withRetries(
        () => this.deps.store.commit(scope, input),
        () => (inDoubt = true),
      );
      if (result.status === 'fenced' && inDoubt) result = (await this.landedCommit(scope, input)) ?? result;
    } catch (err) {
      const landed =
        inDoubt && (err as { code?: unknown }).code === 'already_exists'
          ? await this.landedCommit(scope, input).catch(() => null)
          : null;
      if (!landed) {
        await this.publisher.publish(scope.tenantId, session.id, [
          { type: 'store', data: { ok: false, kind: 'tree', error: errorText(err) } },
        ]);
        throw err;
      }
      result = landed;
    }
    if (result.status === 'fenced') throw new RunFencedError();
    Object.assign(position, {
      path,
      cursors,
      head,
      nextNodeId: next,
      committed: true,
      queueWaiting: result.queued,
      meterKept: meter,
    });
    position.context.push(...nodes.map((n) => ({ id: n.id, message: n.message })));
    position.firstPrompt ??= request.messages.find(isTitledPrompt) ?? null;
    const steered = result.steer as (RunInput & { actor?: unknown }) | null;
    const steer = steered?.content;
    const ended = stop && steer === undefined;
    const events: SessionEventInput[] = [];
    if (ended) events.push({ type: 'status', data: { status: 'idle', runId: null } });
    events.push(
      {
        type: 'turn',
        data: {
          runId: run.id,
          stop: ended ? 'stop' : 'continue',
          reason: ended ? request.reason : 'steer',
          messages: request.messages,
          usage: request.usage,
        },
      },
      { type: 'tree', data: { newNodes: nodes.map((n) => n.id), nodes, ...stored } },
      { type: 'store', data: { ok: true, kind: 'tree' } },
    );
    if (ended && title) {
      position.titleSent = true;
      if (result.titled) {
        events.push({ type: 'title', data: { title } }, { type: 'store', data: { ok: true, kind: 'state' } });
      }
    }
    await this.publisher.publish(scope.tenantId, session.id, events);
    if (steer === undefined) return null;
    const sender = parseActor(steered?.actor);
    return {
      message: userMessage(steer),
      ...(sender ? { scope: scopeOfActor(scope.tenantId, sender) } : {}),
    };
  }

  /**
   * A commit retried after an attempt whose answer was lost (the database went away once it had committed) is
   * refused: fenced (that attempt ended the run, which no longer owns the session) or already_exists (its nodes
   * are there). It landed when the session is where it would have moved it; then the run says the rest: ended, or
   * going on with the steered prompt it took. Answers what the lost answer said, as near as it can be read back, or
   * null when it did not land.
   */
  private async landedCommit(scope: Scope, input: CommitInput): Promise<CommitResult | null> {
    const current = await this.deps.store.get(scope, input.sessionId);
    if (!current || current.nextNodeId !== input.nextNodeId || current.head !== input.position.head)
      return null;
    const titled = input.title !== undefined && current.title === input.title;
    if (!input.finish) return { status: 'ok', steer: null, titled: false, queued: false };
    const run = await this.deps.store.getRun(scope, input.runId);
    if (run?.status === 'completed') return { status: 'ok', steer: null, titled, queued: true };
    if (run?.status === 'running' && current.activeRunId === run.id) {
      return { status: 'ok', steer: run.input, titled: false, queued: false };
    }
    return null;
  }

  private async pause(
    scope: Scope,
    session: SessionRecord,
    run: RunRecord,
    state: PendingState,
  ): Promise<void> {
    const result = await this.withRetries(() =>
      this.deps.store.pauseRun(
        scope,
        session.id,
        run.id,
        state as unknown as Record<string, unknown>,
        state.runUsage,
      ),
    );
    if (result === 'fenced') throw new RunFencedError();
    await this.decisions
      .armExpiry(scope.tenantId, session.id, run.id, state)
      .catch((err: unknown) => this.deps.logger.warn('decision expiry not set', { err, runId: run.id }));
    const toolUses = state.calls.filter((c) => c.needsDecision && !c.decision).map((c) => c.block);
    await this.publisher.publish(scope.tenantId, session.id, [
      { type: 'status', data: { status: 'paused', runId: run.id } },
      { type: 'pause', data: { runId: run.id, reason: state.reason, toolUses } },
    ]);
  }

  private async afterCompleted(
    scope: Scope,
    session: SessionRecord,
    run: RunRecord,
    position: RunPosition,
    usage: Usage,
  ): Promise<void> {
    await this.publisher.activity({
      tenantId: scope.tenantId,
      type: 'run_finished',
      data: { id: session.id, runId: run.id, status: 'completed', usage },
      at: Date.now(),
    });
    await meterAfterRun(this.deps, this.publisher, this.live, scope, session.id, run.id, position.meterKept);
    // The queue is read only when the commit that ended the run saw prompts in it (no read per run otherwise).
    if (position.queueWaiting) this.finishedListener?.(scope.tenantId, session.id);
    // Titled by the run's last commit already (or a title set meanwhile kept), or nothing earlier to title from.
    if (session.title !== null || position.titleSent || session.nextNodeId === 1) return;
    // Untitled with earlier turns (none of them completed a run): title it from its first prompt that has text,
    // once a run completes (a prompt of attachments only gives no title, the next one with text does).
    const current = await this.deps.store.loadTree(scope, session.id);
    if (!current || current.session.title !== null) return;
    const nodes = [...current.nodes].sort((a, b) => a.id - b.id);
    const firstPrompt = nodes.find((n) => isTitledPrompt(n.message))?.message ?? null;
    const title = firstPrompt ? heuristicTitle(messageText(firstPrompt)) : null;
    if (!title) return;
    try {
      const { changed } = await this.deps.store.updateState(scope, session.id, { title });
      await this.publisher.publish(scope.tenantId, session.id, [
        { type: 'title', data: { title } },
        ...(changed ? [{ type: 'store' as const, data: { ok: true as const, kind: 'state' as const } }] : []),
      ]);
    } catch (err) {
      await this.publisher.publish(scope.tenantId, session.id, [
        { type: 'store', data: { ok: false, kind: 'state', error: errorText(err) } },
      ]);
    }
  }

  /**
   * Ends a run as cancelled or failed, restoring a branch's position when nothing was committed. An interrupted
   * run with something to keep (`kept`) commits it in the same write instead, and announces it as a commit.
   */
  async endRun(
    scope: Scope,
    session: Pick<SessionRecord, 'id'>,
    run: RunRecord,
    status: 'cancelled' | 'error',
    error: RunError | null,
    partial: Message[],
    usage: Usage,
    committed: boolean,
    kept?: KeptWork,
    /** What the run read of the path and where it left the session: its meter is counted from them. */
    read?: { session: SessionRecord; position: RunPosition },
  ): Promise<void> {
    const keep = kept && kept.messages.length > 0 ? chainOf(kept) : null;
    const restore = !committed && !keep && run.rollback ? run.rollback : null;
    let result: 'ok' | 'fenced';
    let inDoubt = false;
    try {
      result = await this.withRetries(
        () =>
          this.deps.store.endRun(scope, {
            sessionId: session.id,
            runId: run.id,
            status,
            error,
            usage,
            restore,
            ...(keep ? { commit: { ...keep, usage: kept!.usage } } : {}),
          }),
        () => (inDoubt = true),
      );
      // Refused after an attempt whose answer was lost: that attempt ended the run, when the run says so.
      if (result === 'fenced' && inDoubt) {
        const ended = await this.deps.store.getRun(scope, run.id).catch(() => null);
        if (ended?.status === status) result = 'ok';
      }
    } catch (err) {
      this.deps.logger.error('could not end a run', { err, runId: run.id });
      await this.publisher.publish(scope.tenantId, session.id, [
        { type: 'store', data: { ok: false, kind: 'tree', error: errorText(err) } },
      ]);
      return;
    }
    if (result === 'fenced') return;
    const events: SessionEventInput[] = [{ type: 'status', data: { status: 'idle', runId: null } }];
    if (keep) {
      // What it kept joins the tree as a commit does; the run's record says cancelled.
      events.push(
        {
          type: 'turn',
          data: {
            runId: run.id,
            stop: 'stop',
            reason: 'interrupted',
            messages: kept!.messages,
            usage: kept!.usage,
          },
        },
        {
          type: 'tree',
          data: { newNodes: keep.nodes.map((n) => n.id), nodes: keep.nodes, ...keep.position },
        },
        { type: 'store', data: { ok: true, kind: 'tree' } },
      );
    } else {
      events.push(
        status === 'cancelled'
          ? { type: 'cancelled', data: { runId: run.id, partial, usage } }
          : {
              type: 'error',
              data: {
                runId: run.id,
                code: error?.code ?? 'internal',
                message: error?.message ?? 'the run failed',
                ...(error?.details ? { details: error.details } : {}),
              },
            },
      );
    }
    if (restore) {
      events.push(
        { type: 'tree', data: { newNodes: [], nodes: [], ...restore } },
        { type: 'store', data: { ok: true, kind: 'tree' } },
      );
      // Seed order: the rollback ends with the session's state, as the agent resynced to the restored tree.
      const current = await this.deps.store.get(scope, session.id).catch(() => null);
      if (current) events.push({ type: 'state', data: stateOf(current) });
    }
    await this.publisher.publish(scope.tenantId, session.id, events);
    // The meter of the head the run left, from what it read (none restored: a rollback's head is another path's).
    const meter =
      read && !restore ? this.meterAfterCommit(read.session, read.position, keep?.nodes ?? []) : null;
    const head = keep ? (keep.nodes.at(-1)?.id ?? null) : (read?.position.head ?? null);
    await meterAfterRun(
      this.deps,
      this.publisher,
      this.live,
      scope,
      session.id,
      run.id,
      null,
      meter ? { meter, head } : null,
    );
    await this.publisher.activity({
      tenantId: scope.tenantId,
      type: 'run_finished',
      data: { id: session.id, runId: run.id, status, usage },
      at: Date.now(),
    });
    this.finishedListener?.(scope.tenantId, session.id);
  }

  /**
   * Store writes are retried while the database is unavailable (COMMIT_RETRY_DELAYS_MS, then every
   * STORE_RETRY_EVERY_MS up to STORE_RETRY_MS), then the error stands. `onUnavailable` hears of each such failure.
   */
  private async withRetries<T>(write: () => Promise<T>, onUnavailable?: () => void): Promise<T> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        const unavailable = (err as { code?: unknown }).code === 'unavailable';
        if (!unavailable) throw err;
        onUnavailable?.();
        const delay = COMMIT_RETRY_DELAYS_MS[attempt] ?? STORE_RETRY_EVERY_MS;
        if (Date.now() + delay - started > STORE_RETRY_MS) throw err;
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }
}

/** A cancel's abort reason, or an interrupt's (which the run's end tells apart). */
function abortReason(reason: string): Error {
  return reason === 'interrupted' ? new RunInterrupted() : new Error(reason);
}

/** The nodes of path parts, one after the other. */
function concatParts(parts: readonly PathPart[]): PathPart {
  return {
    nodes: parts.flatMap((p) => p.nodes),
    tokens: parts.flatMap((p) => p.tokens),
    positions: parts.flatMap((p) => p.positions),
    counted: parts.flatMap((p) => p.counted),
  };
}

/** The nodes of a path part whose place in the path (and index in the part) pass `keep`. */
function partWhere(part: PathPart, keep: (position: number, index: number) => boolean): PathPart {
  const at = part.positions.flatMap((position, i) => (keep(position, i) ? [i] : []));
  return {
    nodes: at.map((i) => part.nodes[i]!),
    tokens: at.map((i) => part.tokens[i]!),
    positions: at.map((i) => part.positions[i]!),
    counted: at.map((i) => part.counted[i]!),
  };
}

/**
 * Messages as a chain of nodes under the head (their usage on the last assistant one), and the position they
 * leave.
 */
function chainOf({ messages, usage, position }: KeptWork): {
  nodes: NewNode[];
  position: PositionRecord;
  nextNodeId: NodeId;
} {
  const lastAssistant = findLastIndex(messages, (m) => m.role === 'assistant');
  const nodes: NewNode[] = [];
  const path = [...position.path];
  const cursors = { ...position.cursors };
  let head = position.head;
  let next = position.nextNodeId;
  for (const [i, message] of messages.entries()) {
    const id = next++;
    nodes.push({ id, parentId: head, message, usage: i === lastAssistant ? usage : null });
    // The new node is its parent's newest child, which the path follows without a cursor (Tree.essentialCursors):
    // the parent's cursor goes rather than grow with every message.
    if (head !== null) delete cursors[String(head)];
    path.push(id);
    head = id;
  }
  return { nodes, position: { path, cursors, head }, nextNodeId: next };
}

/** A prompt that can title a session: a turn-opening user message with text. */
function isTitledPrompt(message: Message): boolean {
  return isTurnBoundary(message) && messageText(message).trim() !== '';
}

/** The `state` event's view of a session. */
export function stateOf(session: SessionRecord) {
  return {
    model: session.model,
    system: session.system,
    opts: session.opts,
    tools: session.tools,
    metadata: session.metadata,
  };
}

function findLastIndex<T>(items: T[], pred: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (pred(items[i]!)) return i;
  return -1;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
