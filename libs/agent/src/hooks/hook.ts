// Hooks (Agentix): pre-hooks run before every model call and may inject content into that call's context
// (never persisted) or halt the run; post-hooks see each assistant message and may halt the tool loop.
// Registered in code, like tools.

import type { Block, Message, Scope } from '@canopy/core';

export interface HookTurn {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly runId: string;
  /** 0-based index of the model call about to be made (pre) or just made (post). */
  readonly step: number;
  /** The context the model sees (read-only). */
  readonly context: readonly Message[];
  readonly signal: AbortSignal;
}

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
