// The turn runner (the agent loop, with a per-turn context for hooks and tools): model steps and tool rounds until the
// model stops. It streams events as they happen, pauses when a tool call needs a decision, retries provider
// failures that are safe to retry, and hands its messages to the caller at commit points. It persists nothing
// itself: `RunIO` (the session layer) commits, pauses and supplies steered prompts.

import { context as otelContext, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  CanopyException,
  SPAN,
  canopyTracer,
  currentTraceCarrier,
  isDependencyUnavailable,
} from '@canopy/common';
import {
  addUsage,
  emptyUsage,
  isTurnBoundary,
  scopeOfActor,
  toolResultMessage,
  toolUses,
  type AssistantBlock,
  type Block,
  type ClientTool,
  type ContextPolicy,
  type ContextSummary,
  type Message,
  type Scope,
  type SessionEventInput,
  type ToolResultBlock,
  type ToolUseBlock,
  type Usage,
} from '@canopy/core';
import type { AgentTurn } from '../hooks/hook';
import type { HaltCode, HookRegistry } from '../hooks/hook-registry';
import { ModelError, type FinishReason, type ModelGateway } from '../model/model-gateway.port';
import type { ToolRegistry } from '../tools/tool-registry';
import type { ServerTool } from '../tools/server-tool';
import { retryDelayMs, sleep, type RetryPolicy } from './retry';
import { awaitingIds, type PendingState, type ToolCallState } from './run-state';
import { errorResult, executeServerTool } from './tool-executor';
import { keptOnInterrupt } from './interrupted';
import { recordToolResult } from '../telemetry/tool-spans';
import { contextPolicyOf, planContext, reserveFor, type ContextPlan } from '../context/context-plan';
import {
  DEFAULT_SUMMARY_PROMPT,
  DEFAULT_TRIGGER_RATIO,
  summaryCut,
  summaryLength,
  summaryOnPath,
  summaryRequest,
  summaryText,
  systemWithSummary,
} from '../context/summary';
import { tokenCounterFor, type TokenCounter } from '../context/tokens';
import type { ModelLimits } from '../model/model-limits';

export interface RunSpec {
  /** Who acts this execution: hooks and tools get it (see callerScopes). */
  scope: Scope;
  /**
   * True when later callers act their part: an approved server tool runs in its approver's scope (a decision's
   * `decidedBy`), a steered prompt's turn in its sender's. False keeps everything in `scope` (recovery: a
   * takeover re-runs the run under the system scope).
   */
  callerScopes?: boolean;
  sessionId: string;
  runId: string;
  model: string;
  system: string | null;
  opts: Record<string, unknown>;
  clientTools: ClientTool[];
  /** Names of the registered server tools this session enables. */
  serverTools: string[];
  maxSteps: number;
  /** Messages along the session's active path: the committed context the run continues. */
  history: Message[];
  /** The tree nodes of `history`, in the same order (summaries are stored against them). */
  historyNodeIds?: number[];
  /** Summaries stored against nodes of the path (context policy `summarize`), oldest node first. */
  summaries?: ContextSummary[];
  /** The token counts stored with `history`'s nodes (null: not stored), in the same order: not counted again. */
  historyTokens?: Array<number | null>;
  /**
   * The session's calibration (ContextMeter.calibration): counts are raised by it, the provider having reported
   * more input tokens than they came to.
   */
  calibration?: number;
  /**
   * prompt: a new user message (appended and committed by the run); continue: the path already ends with the
   * user message to answer (regeneration); resume: a paused run with its decisions recorded.
   */
  start:
    { type: 'prompt'; message: Message } | { type: 'continue' } | { type: 'resume'; pending: PendingState };
  signal: AbortSignal;
}

export interface CommitRequest {
  /** The run's messages since its last commit. */
  messages: Message[];
  /** Usage of those messages (goes on the last assistant node). */
  usage: Usage;
  /** Usage of the whole run so far. */
  runUsage: Usage;
  stop: 'stop' | 'continue';
  reason: string;
}

export interface RunIO {
  emit(event: SessionEventInput): void;
  /**
   * Commits; throws RunFencedError when the run no longer owns the session. A `stop` commit that finds a prompt
   * staged on the run (`ifBusy: "steer"`, last one wins) does not end the run: it returns that prompt (with the
   * scope of who sent it), and the run continues with it.
   */
  commit(request: CommitRequest): Promise<{ message: Message; scope?: Scope } | null>;
  /** Persists the paused state; throws RunFencedError like commit. */
  pause(state: PendingState): Promise<void>;
  /** Stores a summary the run wrote (context policy `summarize`); absent: summaries are not kept. */
  saveSummary?(summary: ContextSummary & { model: string; usage: Usage }): Promise<void>;
  /** Hears the calibration of the session's counts after a model call reported its input (undefined: none). */
  calibrated?(calibration: number | undefined): void;
}

/** A calibration is at most this: a provider reporting more than twice the count is taken as twice. */
export const MAX_CALIBRATION = 2;

export type RunOutcome =
  | { status: 'completed'; usage: Usage }
  | { status: 'paused'; usage: Usage }
  | {
      status: 'cancelled';
      partial: Message[];
      usage: Usage;
      /**
       * What the run keeps if a newer prompt interrupted it (see interrupted.ts): its messages since its last
       * commit, completed and closed, with the text it was streaming; `keptUsage` is their usage.
       */
      kept: Message[];
      keptUsage: Usage;
    }
  | {
      status: 'error';
      code: string;
      message: string;
      /** Figures of some codes (`context_length_exceeded`: tokens, window). */
      details?: Record<string, unknown>;
      partial: Message[];
      usage: Usage;
    }
  | { status: 'fenced'; usage: Usage };

export interface TurnRunnerDeps {
  gateway: ModelGateway;
  tools: ToolRegistry;
  hooks: HookRegistry;
  toolTimeoutMs: number;
  retry: RetryPolicy;
  /** The model's window and output limit (absent: unknown, and every request is sent whole). */
  limits?: (model: string, opts: Record<string, unknown>) => ModelLimits;
}

/** The run lost the session (cancelled elsewhere, recovered, superseded): it must stop without writing. */
export class RunFencedError extends Error {
  constructor() {
    super('the run no longer owns the session');
    this.name = 'RunFencedError';
  }
}

/** The request, after the session's context policy, is over the model's window: no provider call is made. */
class ContextLengthExceeded extends Error {
  constructor(readonly plan: ContextPlan) {
    super(
      `the request is ${plan.tokens} tokens: over the model's window of ${plan.window} less ${
        (plan.window ?? 0) - (plan.budget ?? 0)
      } kept for the reply (opts.context chooses what to send of a long conversation)`,
    );
  }
}

class RunHalted extends Error {
  constructor(
    readonly code: HaltCode,
    readonly hook: string,
    readonly reason: string,
  ) {
    super(haltMessage(code, hook, reason));
  }
}

function haltMessage(code: HaltCode, hook: string, reason: string): string {
  switch (code) {
    case 'hook_failed':
      return `pre-hook ${hook} failed: ${reason}`;
    case 'injection_overflow':
      return `pre-hook ${hook} overflowed the injection budget: ${reason}`;
    default:
      return `halted by hook ${hook}: ${reason}`;
  }
}

export function runTurn(spec: RunSpec, io: RunIO, deps: TurnRunnerDeps): Promise<RunOutcome> {
  return new TurnRun(spec, io, deps).run();
}

class TurnRun {
  /** Everything the model sees. */
  private readonly context: Message[];
  /** Messages since the last commit. */
  private segment: Message[] = [];
  private segmentUsage = emptyUsage();
  private runUsage = emptyUsage();
  private step = 0;
  /** What the model call in progress streamed so far, as a message (set once its first part arrived). */
  private partial: (() => Message) | null = null;
  /** Who acts the current turn (a steered prompt's turn is its sender's). */
  private scope: Scope;
  /** Which turn of the run this is (a steered prompt opens the next one) and the message that opened it. */
  private turnIndex = 0;
  private userMessage: Message | null = null;
  /** What the last model call was sent (injections included), and its injections: what its tools see. */
  private sent: { messages: readonly Message[]; injections: readonly Block[] } | null = null;
  private readonly counter: TokenCounter;
  private readonly limits: ModelLimits;
  private readonly policy: ContextPolicy;
  /** Tokens of each message counted so far (messages never change once made). */
  private readonly counted = new WeakMap<Message, number>();
  /** The last plan of what to send: its figures go with a context-length error. */
  private lastPlan: ContextPlan | null = null;
  /** The summary in use (`summarize`) and how many messages of the context it stands for (not sent). */
  private summary: ContextSummary | null = null;
  private summarized = 0;
  /** A summary failed in this run: it truncates from then on. */
  private summaryFailed = false;
  /** The tools this run adds to the registered ones (its session's MCP servers' tools), by name. */
  private readonly runTools = new Map<string, ServerTool<unknown>>();
  /** What counts are multiplied by (RunSpec.calibration; 1: as counted). */
  private calibration: number;

  constructor(
    private readonly spec: RunSpec,
    private readonly io: RunIO,
    private readonly deps: TurnRunnerDeps,
  ) {
    this.context = [...spec.history];
    spec.historyTokens?.forEach((tokens, i) => {
      const message = spec.history[i];
      if (tokens !== null && message) this.counted.set(message, tokens);
    });
    this.calibration = spec.calibration ?? 1;
    this.scope = spec.scope;
    this.counter = tokenCounterFor(spec.model);
    this.limits = deps.limits?.(spec.model, spec.opts) ?? { contextWindow: null, maxOutputTokens: null };
    this.policy = contextPolicyOf(spec.opts);
    if (this.policy.strategy === 'summarize') {
      const onPath = summaryOnPath(spec.historyNodeIds ?? [], spec.summaries ?? []);
      if (onPath) {
        this.summary = onPath.summary;
        this.summarized = onPath.index + 1;
      }
    }
  }

  async run(): Promise<RunOutcome> {
    try {
      await this.loadRunTools();
      const start = this.spec.start;
      if (start.type === 'prompt') {
        this.appendUser(start.message);
      } else if (start.type === 'continue') {
        this.userMessage = lastTurnBoundary(this.context);
      } else if (start.type === 'resume') {
        this.restore(start.pending);
        const done = await this.finishToolRound(start.pending.calls);
        if (done) return done;
      }
      return await this.loop();
    } catch (err) {
      return this.failure(err);
    }
  }

  private async loop(): Promise<RunOutcome> {
    for (;;) {
      if (this.step >= this.spec.maxSteps) {
        // The cap comes after a tool round: its results are in, so no tool use is left without one.
        const done = await this.finish('max_steps');
        if (done) return done;
      }
      const { assistant, halt } = await this.modelStep();
      const uses = toolUses(assistant);
      if (uses.length > 0 && halt) {
        // Never leave tool uses without results: the halted round answers each with an error.
        this.appendToolResults(
          uses.map((u) => errorResult(u.id, `not run: halted by hook ${halt.hook}: ${halt.reason}`)),
          uses,
        );
      }
      if (uses.length === 0 || halt) {
        const done = await this.finish(halt ? 'hook_halted' : 'stop');
        if (done) return done;
        continue; // a steered prompt follows
      }
      const done = await this.toolRound(uses);
      if (done) return done;
    }
  }

  /** The turn hooks and tools get : who acts, the turn's opening message, the context. */
  private turn(scope: Scope = this.scope): AgentTurn {
    return {
      scope,
      sessionId: this.spec.sessionId,
      runId: this.spec.runId,
      turnRef: `${this.spec.runId}:${this.turnIndex}`,
      step: this.step,
      userMessage: this.userMessage,
      context: this.sent?.messages ?? [...this.context],
      injections: this.sent?.injections ?? [],
      assistantMessage: null,
      toolCallId: null,
      signal: this.spec.signal,
      reportProgress: () => undefined, // outside a tool call: nothing to report on
    };
  }

  /** One model call: pre-hooks, the streamed call with retries, post-hooks. */
  private async modelStep(): Promise<{ assistant: Message; halt: { hook: string; reason: string } | null }> {
    this.sent = null;
    if (this.policy.strategy === 'summarize') await this.summarizeWhenDue();
    // The context after the session's policy is what hooks see and what is sent; their injections count too.
    const fixed = this.limits.contextWindow === null ? 0 : this.fixedTokens();
    let planned = this.planned(fixed);
    const pre = await this.deps.hooks.runPre({ ...this.turn(), context: planned });
    if (pre.halted) throw new RunHalted(pre.code, pre.hook, pre.reason);
    if (pre.injections.length > 0 && this.limits.contextWindow !== null) {
      planned = this.planned(
        fixed + this.counter.message({ role: 'user', content: pre.injections, timestamp: 0 }),
      );
    }
    const messages = withInjections(planned, pre.injections);
    this.sent = { messages, injections: pre.injections };

    let failures = 0;
    let result: { message: Message; usage: Usage; finishReason: FinishReason };
    for (;;) {
      try {
        result = await this.streamOnce(messages, failures);
        break;
      } catch (err) {
        if (this.spec.signal.aborted || !(err instanceof ModelError) || !err.retryable) throw err;
        if (failures >= this.deps.retry.maxRetries) throw err;
        failures++;
        const delayMs = retryDelayMs(failures, err.details.retryAfterMs, this.deps.retry);
        if (delayMs === null) throw err;
        this.emit({
          type: 'retry',
          data: { runId: this.spec.runId, attempt: failures, delayMs, error: err.message },
        });
        await sleep(delayMs, this.spec.signal);
      }
    }
    this.step++;
    this.calibrate(result.usage);
    const assistant = result.message;
    this.partial = null;
    this.segment.push(assistant);
    this.context.push(assistant);
    this.segmentUsage = addUsage(this.segmentUsage, result.usage);
    this.runUsage = addUsage(this.runUsage, result.usage);
    this.emit({ type: 'message', data: { runId: this.spec.runId, message: assistant } });
    this.emit({
      type: 'step',
      data: {
        runId: this.spec.runId,
        step: this.step,
        usage: result.usage,
        finishReason: result.finishReason,
      },
    });
    const post = await this.deps.hooks.runPost({
      ...this.turn(),
      step: this.step - 1,
      assistantMessage: assistant,
    });
    return { assistant, halt: post.halted ? { hook: post.hook, reason: post.reason } : null };
  }

  /**
   * A provider's reported input tokens are the truth for the request it was sent: when they are more than the request
   * was counted at, later counts of the session are raised by that ratio (at most MAX_CALIBRATION); when they are
   * not, counts are taken as they are again. A request not counted (no window known) or a report of nothing changes
   * nothing.
   */
  private calibrate(usage: Usage): void {
    const plan = this.lastPlan;
    const reported = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
    if (!plan || plan.tokens === 0 || reported === 0) return;
    const counted = plan.tokens / this.calibration;
    const ratio = Math.min(MAX_CALIBRATION, Math.ceil((reported / counted) * 100) / 100);
    const next = ratio > 1 ? ratio : 1;
    if (next === this.calibration) return;
    this.calibration = next;
    this.io.calibrated?.(next === 1 ? undefined : next);
  }

  /** A count as the calibration has it. */
  private calibrated(tokens: number): number {
    return this.calibration === 1 ? tokens : Math.ceil(tokens * this.calibration);
  }

  private count(m: Message): number {
    let n = this.counted.get(m);
    if (n === undefined) {
      n = this.counter.message(m);
      this.counted.set(m, n);
    }
    return n;
  }

  /** The system prompt as sent: the session's, with the summary in use. */
  private system(): string | null {
    return systemWithSummary(this.spec.system, this.summary);
  }

  /** Tokens of a request besides its messages: the system prompt (with the summary) and the tools. */
  private fixedTokens(): number {
    return this.counter.system(this.system()) + this.counter.tools(this.toolSpecs());
  }

  /**
   * `summarize`: once the request passes the trigger, the oldest turns after the summary in use are summarized by
   * one model call (part of the run: its events, its usage, its cancel); the summary is stored against the last node
   * it covers and stands for those turns from then on. A failed summary is said in an event, and the run truncates.
   */
  private async summarizeWhenDue(): Promise<void> {
    const window = this.limits.contextWindow;
    if (this.summaryFailed || window === null) return;
    const budget = Math.max(0, window - reserveFor(this.policy, window, this.limits.maxOutputTokens));
    const base = this.context.slice(this.summarized);
    const tokens = base.map((m) => this.count(m));
    const sent = (from: number) => tokens.slice(from).reduce((sum, t) => sum + t, 0);
    const total = this.calibrated(this.fixedTokens() + sent(0));
    if (total <= (this.policy.triggerRatio ?? DEFAULT_TRIGGER_RATIO) * budget) return;
    const model = this.policy.summaryModel ?? this.spec.model;
    const own = this.deps.limits?.(model, this.spec.opts).contextWindow ?? null;
    const summaryTokens = summaryLength(own);
    // What the summarizing call may be given of the conversation: its window less the summary and the request.
    const asked =
      this.counter.text(this.policy.summaryPrompt ?? DEFAULT_SUMMARY_PROMPT) +
      (this.summary?.tokens ?? 0) +
      64;
    const nodeIds = this.spec.historyNodeIds ?? [];
    const cut = summaryCut({
      messages: base,
      tokens,
      committed: Math.max(0, nodeIds.length - this.summarized),
      // The new summary replaces the one in use: the session's own system prompt, the tools and the new summary.
      fixedTokens:
        this.counter.system(this.spec.system) + this.counter.tools(this.toolSpecs()) + summaryTokens,
      // The turns are counted as they are: the budget is what the calibration leaves of it in those counts.
      budget: Math.floor(budget / this.calibration),
      summarizerBudget: own === null ? null : Math.max(0, own - summaryTokens - asked),
    });
    if (cut === null) return;
    const through = nodeIds[this.summarized + cut - 1]!;
    const context = (
      kind: 'summarizing' | 'summarized' | 'summary_failed',
      tokens: number,
      message?: string,
    ) =>
      this.emit({
        type: 'context',
        data: {
          runId: this.spec.runId,
          kind,
          strategy: 'summarize',
          tokens,
          window,
          summarizedThrough: this.summary?.throughNodeId ?? null,
          ...(message !== undefined ? { message } : {}),
        },
      });
    context('summarizing', total);
    // The summarizing call is a span of its own (its model call a `chat` span under it).
    const span = canopyTracer().startSpan(SPAN.summarize, {
      attributes: { 'canopy.summary.through_node_id': through, 'canopy.summary.messages': cut },
    });
    try {
      const { message, usage } = await otelContext.with(trace.setSpan(otelContext.active(), span), () =>
        this.summarize(model, base.slice(0, cut), summaryTokens),
      );
      this.runUsage = addUsage(this.runUsage, usage);
      this.segmentUsage = addUsage(this.segmentUsage, usage);
      const text = summaryText(message);
      if (text === '') throw new Error('the summary came back empty');
      const summary: ContextSummary = { throughNodeId: through, text, tokens: this.counter.text(text) };
      await this.io.saveSummary?.({ ...summary, model, usage });
      this.summary = summary;
      this.summarized += cut;
      context('summarized', this.calibrated(this.fixedTokens() + sent(cut)));
      span.end();
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorText(err) });
      span.end();
      if (this.spec.signal.aborted || err instanceof RunFencedError) throw err;
      this.summaryFailed = true;
      context(
        'summary_failed',
        total,
        `the summary failed, the oldest turns are left out instead: ${errorText(err)}`,
      );
    }
  }

  /** The summarizing call: the transcript of `messages` (after the summary in use) to the summary model. */
  private async summarize(
    model: string,
    messages: Message[],
    maxTokens: number,
  ): Promise<{ message: Message; usage: Usage }> {
    const stream = this.deps.gateway.stream({
      model,
      system: null,
      messages: [summaryRequest(this.policy.summaryPrompt, this.summary, messages)],
      tools: [],
      opts: { maxTokens },
      attempt: 0,
      signal: this.spec.signal,
      tenantId: this.spec.scope.tenantId,
    });
    for await (const part of stream) {
      if (part.type === 'finish') return { message: part.message, usage: part.usage };
    }
    throw new ModelError('provider_error', 'the summary stream ended without finishing', {
      retryable: false,
      streamed: true,
    });
  }

  /** The messages the policy sends of the context; throws ContextLengthExceeded when even they are too many. */
  private planned(fixedTokens: number): Message[] {
    const base = this.summarized === 0 ? this.context : this.context.slice(this.summarized);
    // A model whose window is not known is sent everything: nothing to count.
    if (this.limits.contextWindow === null) return [...base];
    const tokens = base.map((m) => this.calibrated(this.count(m)));
    const plan = planContext({
      messages: base,
      tokens,
      fixedTokens: this.calibrated(fixedTokens),
      window: this.limits.contextWindow,
      maxOutputTokens: this.limits.maxOutputTokens,
      policy: this.policy,
    });
    this.lastPlan = plan;
    if (!plan.fits) throw new ContextLengthExceeded(plan);
    return plan.dropped === 0 ? [...base] : plan.sent.map((i) => base[i]!);
  }

  private async streamOnce(
    messages: Message[],
    attempt: number,
  ): Promise<{ message: Message; usage: Usage; finishReason: FinishReason }> {
    const runId = this.spec.runId;
    const blocks: AssistantBlock[] = [];
    const startedAt = Date.now();
    // What a failure keeps of this call once a part arrived: built when needed, not on every part.
    const partial = (): Message => ({
      role: 'assistant',
      content: blocks.filter(Boolean),
      timestamp: startedAt,
    });
    const track = () => {
      this.partial = partial;
    };
    const stream = this.deps.gateway.stream({
      model: this.spec.model,
      system: this.system(),
      messages,
      tools: this.toolSpecs(),
      opts: this.spec.opts,
      attempt,
      signal: this.spec.signal,
      tenantId: this.spec.scope.tenantId,
    });
    for await (const part of stream) {
      switch (part.type) {
        case 'text_start':
          blocks[part.index] = { type: 'text', text: '' };
          this.emit({ type: 'text_start', data: { runId, index: part.index } });
          break;
        case 'text_delta':
        case 'thinking_delta': {
          const block = blocks[part.index];
          if (block && (block.type === 'text' || block.type === 'thinking')) block.text += part.delta;
          this.emit({ type: part.type, data: { runId, index: part.index, delta: part.delta } });
          break;
        }
        case 'text_end':
          this.emit({ type: 'text_end', data: { runId, index: part.index } });
          break;
        case 'thinking_start':
          blocks[part.index] = { type: 'thinking', text: '' };
          this.emit({ type: 'thinking_start', data: { runId, index: part.index } });
          break;
        case 'thinking_end':
          this.emit({ type: 'thinking_end', data: { runId, index: part.index } });
          break;
        case 'tool_use_start':
          blocks[part.index] = { type: 'tool_use', id: part.id, name: part.name, input: {} };
          this.emit({
            type: 'tool_use_start',
            data: { runId, index: part.index, id: part.id, name: part.name },
          });
          break;
        case 'tool_use_delta':
          this.emit({
            type: 'tool_use_delta',
            data: { runId, index: part.index, id: part.id, delta: part.delta },
          });
          break;
        case 'tool_use_end':
          blocks[part.index] = part.block;
          this.emit({ type: 'tool_use_end', data: { runId, index: part.index, block: part.block } });
          break;
        case 'finish':
          return { message: part.message, usage: part.usage, finishReason: part.finishReason };
      }
      track();
    }
    throw new ModelError('provider_error', 'the model stream ended without finishing', {
      retryable: false,
      streamed: true,
    });
  }

  /** Plans and runs a tool round; returns an outcome when the run pauses or ends here. */
  private async toolRound(uses: ToolUseBlock[]): Promise<RunOutcome | null> {
    const calls: ToolCallState[] = uses.map((block) => {
      const server = this.serverTool(block.name);
      const client = this.spec.clientTools.find((t) => t.name === block.name);
      if (server) {
        return { block, kind: 'server', needsDecision: !!server.approval, decision: null, result: null };
      }
      if (client) return { block, kind: 'client', needsDecision: true, decision: null, result: null };
      return {
        block,
        kind: 'unknown',
        needsDecision: false,
        decision: null,
        result: errorResult(block.id, `unknown tool: ${block.name}`),
      };
    });
    this.recordCalls(calls.filter((c) => c.kind === 'unknown'));
    // Tools that need no decision run now, even if others of the round wait for one.
    await this.runServerCalls(calls.filter((c) => c.kind === 'server' && !c.needsDecision));
    if (awaitingIds({ calls }).length > 0) {
      const reason = calls.some((c) => c.kind === 'client' && !c.decision) ? 'client_tool' : 'approval';
      await this.io.pause({
        version: 1,
        messages: this.segment,
        calls,
        reason,
        step: this.step,
        maxSteps: this.spec.maxSteps,
        segmentUsage: this.segmentUsage,
        runUsage: this.runUsage,
        turn: this.turnIndex,
        // The run's trace: the execution that resumes it links to it.
        ...traceOfPause(),
      });
      return { status: 'paused', usage: this.runUsage };
    }
    return this.finishToolRound(calls);
  }

  /** Applies decisions, runs approved calls, appends the results message; ends the run at the step cap. */
  private async finishToolRound(calls: ToolCallState[]): Promise<RunOutcome | null> {
    const approved: ToolCallState[] = [];
    for (const call of calls) {
      if (call.result || !call.decision) continue;
      const d = call.decision;
      if (d.type === 'reject') {
        call.result = errorResult(call.block.id, `Tool rejected${d.reason ? `: ${d.reason}` : ''}`);
      } else if (d.type === 'result') {
        call.result = {
          type: 'tool_result',
          toolUseId: call.block.id,
          content: d.content as ToolResultBlock['content'],
          isError: d.isError === true,
        };
      } else if (call.kind === 'server') {
        approved.push(call);
      } else {
        call.result = errorResult(
          call.block.id,
          `tool ${call.block.name} runs on the client: it needs a result, not execute`,
        );
      }
    }
    await this.runServerCalls(approved);
    // What came back with a decision (a client tool's result, a rejection): a span each.
    this.recordCalls(
      calls.filter((c) => c.decision && c.decision.type !== 'execute' && !approved.includes(c)),
    );
    const missing = calls.filter((c) => !c.result);
    if (missing.length > 0)
      throw new Error(`tool round incomplete: ${missing.map((c) => c.block.id).join(', ')}`);
    this.appendToolResults(
      calls.map((c) => c.result!),
      calls.map((c) => c.block),
    );
    return null;
  }

  /** Tool calls whose result did not come from running them here: an `execute_tool` span each that says so. */
  private recordCalls(calls: ToolCallState[]): void {
    for (const call of calls) {
      if (!call.result) continue;
      const kind =
        call.kind === 'client' ? 'client' : this.serverTool(call.block.name)?.mcpServer ? 'mcp' : 'server';
      const errorType =
        call.kind === 'unknown'
          ? 'unknown_tool'
          : call.decision?.type === 'reject'
            ? 'rejected'
            : 'tool_error';
      recordToolResult(call.block, kind, call.result, errorType);
    }
  }

  private async runServerCalls(calls: ToolCallState[]): Promise<void> {
    // The step that asked for the calls (the last one): its index is the count of steps before it.
    const step = Math.max(0, this.step - 1);
    await Promise.all(
      calls.map(async (call) => {
        const tool = this.serverTool(call.block.name)!;
        // An approved tool runs in its approver's scope, unless recovery re-runs it.
        const scope =
          this.spec.callerScopes !== false && call.decidedBy
            ? scopeOfActor(this.spec.scope.tenantId, call.decidedBy)
            : this.scope;
        call.result = await executeServerTool(tool, call.block, {
          turn: { ...this.turn(scope), step },
          defaultTimeoutMs: this.deps.toolTimeoutMs,
          emit: (e) => this.emit(e),
        });
      }),
    );
  }

  /** Emits each result, then the one user message carrying them all, in tool-use order. */
  private appendToolResults(results: ToolResultBlock[], uses: ToolUseBlock[]): void {
    const runId = this.spec.runId;
    const names = new Map(uses.map((u) => [u.id, u.name]));
    for (const result of results) {
      this.emit({
        type: 'tool_result',
        data: { runId, toolName: names.get(result.toolUseId) ?? '', result },
      });
    }
    const message = toolResultMessage(results);
    this.segment.push(message);
    this.context.push(message);
    this.emit({ type: 'message', data: { runId, message } });
  }

  private appendUser(message: Message): void {
    this.userMessage = message;
    this.segment.push(message);
    this.context.push(message);
    this.emit({ type: 'message', data: { runId: this.spec.runId, message } });
  }

  private restore(pending: PendingState): void {
    this.segment = [...pending.messages];
    this.context.push(...pending.messages);
    this.step = pending.step;
    this.segmentUsage = pending.segmentUsage;
    this.runUsage = pending.runUsage;
    this.turnIndex = pending.turn ?? 0;
    this.userMessage = lastTurnBoundary(this.context);
  }

  /**
   * Commits the segment as the run's end. Returns the outcome, or null when a steered prompt was staged: the
   * commit then only closed a turn, and the run goes on with that prompt (its own chain of up to maxSteps).
   */
  private async finish(reason: string): Promise<RunOutcome | null> {
    const steered = await this.io.commit({
      messages: this.segment,
      usage: this.segmentUsage,
      runUsage: this.runUsage,
      stop: 'stop',
      reason,
    });
    this.segment = [];
    this.segmentUsage = emptyUsage();
    if (!steered) return { status: 'completed', usage: this.runUsage };
    this.step = 0;
    this.turnIndex++;
    this.sent = null;
    if (steered.scope && this.spec.callerScopes !== false) this.scope = steered.scope;
    this.appendUser(steered.message);
    return null;
  }

  private failure(err: unknown): RunOutcome {
    const partial = this.partial ? [...this.segment, this.partial()] : [...this.segment];
    if (err instanceof RunFencedError) return { status: 'fenced', usage: this.runUsage };
    if (this.spec.signal.aborted) {
      return {
        status: 'cancelled',
        partial,
        usage: this.runUsage,
        kept: keptOnInterrupt(this.segment, this.partial ? this.partial() : null),
        keptUsage: this.segmentUsage,
      };
    }
    if (err instanceof RunHalted) {
      return { status: 'error', code: err.code, message: err.message, partial, usage: this.runUsage };
    }
    if (err instanceof ContextLengthExceeded) {
      const { tokens, window } = err.plan;
      return {
        status: 'error',
        code: 'context_length_exceeded',
        message: err.message,
        details: { tokens, window },
        partial,
        usage: this.runUsage,
      };
    }
    if (err instanceof ModelError) {
      // The provider's own verdict on the request's length: the figures as far as Canopy counted them.
      const details =
        err.code === 'context_length_exceeded'
          ? { details: { tokens: this.lastPlan?.tokens ?? null, window: this.limits.contextWindow } }
          : {};
      return {
        status: 'error',
        code: err.code,
        message: err.message,
        ...details,
        partial,
        usage: this.runUsage,
      };
    }
    // A dependency that did not answer (the database, Redis) ends the run as `unavailable`: the prompt can be
    // sent again once it is back, which `internal` would not say.
    if ((err instanceof CanopyException && err.code === 'unavailable') || isDependencyUnavailable(err)) {
      return {
        status: 'error',
        code: 'unavailable',
        message: `the run could not go on: a dependency did not answer (${err instanceof Error ? err.message : String(err)})`,
        partial,
        usage: this.runUsage,
      };
    }
    return {
      status: 'error',
      code: 'internal',
      message: `the run failed: ${err instanceof Error ? err.message : String(err)}`,
      partial,
      usage: this.runUsage,
    };
  }

  private toolSpecs() {
    return this.deps.tools.specsFor(this.spec.serverTools, this.spec.clientTools, [
      ...this.runTools.values(),
    ]);
  }

  /** The tools the session's MCP servers add (looked up once per execution, a resumed one too). */
  private async loadRunTools(): Promise<void> {
    const { scope, sessionId, runId, opts } = this.spec;
    for (const tool of await this.deps.tools.runTools({ scope, sessionId, runId, opts }))
      this.runTools.set(tool.name, tool);
  }

  /** A server tool the session enables, or one its MCP servers add. */
  private serverTool(name: string): ServerTool<unknown> | undefined {
    if (this.spec.serverTools.includes(name)) return this.deps.tools.get(name);
    return this.runTools.get(name);
  }

  private emit(event: SessionEventInput): void {
    this.io.emit(event);
  }
}

function lastTurnBoundary(messages: readonly Message[]): Message | null {
  for (let i = messages.length - 1; i >= 0; i--) if (isTurnBoundary(messages[i]!)) return messages[i]!;
  return null;
}

/** Adds hook injections to the last user message of a copy of the context (never to the stored messages). */
function withInjections(context: Message[], injections: Message['content']): Message[] {
  if (injections.length === 0) return context;
  const copy = [...context];
  for (let i = copy.length - 1; i >= 0; i--) {
    const m = copy[i]!;
    if (m.role === 'user') {
      copy[i] = { ...m, content: [...m.content, ...injections] };
      return copy;
    }
  }
  copy.push({ role: 'user', content: injections, timestamp: Date.now() });
  return copy;
}

/** The active trace context as a paused run keeps it (`trace`), when there is one. */
function traceOfPause(): { trace?: PendingState['trace'] } {
  const carrier = currentTraceCarrier();
  return carrier ? { trace: carrier } : {};
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
