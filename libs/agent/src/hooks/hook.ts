// Hooks: pre-hooks run before every model call and may inject content into that call's context
// (never persisted) or halt the run; post-hooks see each assistant message and may halt the tool loop.
// Registered in code, like tools. Hooks and server tools get the same per-turn context (the Turn).

import type { Block, Message, Scope } from '@canopy/core';

/**
 * The per-turn context handed to hooks and server tools: who acts, the message that opened the
 * turn, the context sent to the model, and the hook pipeline's state.
 */
export interface AgentTurn {
  /**
   * The caller acting this turn: who started the run, or who resumed it (an approved tool runs under its
   * approver's scope); the system scope for turns driven by timers or recovery (decision expiry, takeover).
   */
  readonly scope: Scope;
  readonly sessionId: string;
  readonly runId: string;
  /** Opaque: names this turn of the run (a steered prompt opens another turn in the same run). */
  readonly turnRef: string;
  /** 0-based index of the model call about to be made (pre), just made (post) or that asked for the tool. */
  readonly step: number;
  /** The user message that opened the turn (the prompt, or the prompt being regenerated). */
  readonly userMessage: Message | null;
  /**
   * The assembled context: the messages sent to the model (read-only). Pre-hooks see it before this call's
   * injections are added; post-hooks and tools see what the model was sent, injections included.
   */
  readonly context: readonly Message[];
  /** Content pre-hooks injected into this model call: those before this one (pre), or all of them. */
  readonly injections: readonly Block[];
  /** The finalised assistant message (post-hooks only; null for pre-hooks and tools). */
  readonly assistantMessage: Message | null;
  /** The tool call being run (server tools only; null for hooks). */
  readonly toolCallId: string | null;
  readonly signal: AbortSignal;
  /** Emits `tool_progress` for the tool call being run; a no-op outside one (hooks) and once it has finished. */
  reportProgress(payload: unknown): void;
}

/** What hooks get. */
export type HookTurn = AgentTurn;

export type PreHookResult = { action: 'continue'; inject?: Block[] } | { action: 'halt'; reason: string };
export type PostHookResult = { action: 'continue' } | { action: 'halt'; reason: string };

export interface PreHook {
  name: string;
  phase: 'pre';
  /** Sequential hooks run first, in registration order; parallel ones then run together under a timeout. */
  mode: 'sequential' | 'parallel';
  /** Parallel hooks only: a hook slower than this is skipped. */
  timeoutMs?: number;
  run(turn: HookTurn): Promise<PreHookResult> | PreHookResult;
}

export interface PostHook {
  name: string;
  phase: 'post';
  run(turn: HookTurn & { readonly assistantMessage: Message }): Promise<PostHookResult> | PostHookResult;
}

export type Hook = PreHook | PostHook;
