// What a paused run persists (runs.pending) so that any process, after any restart, can resume it: the
// uncommitted messages of the run, the tool round waiting for decisions, and the counters of the loop.

import type { Actor, Block, Message, ToolResultBlock, ToolUseBlock, Usage } from '@canopy/core';
import type { TraceCarrier } from '@canopy/common';

export type Decision =
  | { type: 'execute' }
  | { type: 'reject'; reason?: string }
  | { type: 'result'; content: string | Block[]; isError?: boolean };

export type ToolKind = 'server' | 'client' | 'unknown';

export interface ToolCallState {
  block: ToolUseBlock;
  kind: ToolKind;
  /** Waits for a decision before anything runs (client tools, approval tools). */
  needsDecision: boolean;
  decision: Decision | null;
  /** Who took the decision: an approved server tool runs in their scope. */
  decidedBy?: Actor;
  /** Filled once known (server tools that ran, unknown tools, rejected or answered calls). */
  result: ToolResultBlock | null;
}

export interface PendingState {
  version: 1;
  /** Uncommitted messages of the run, ending with the assistant message whose tool round is pending. */
  messages: Message[];
  calls: ToolCallState[];
  reason: 'approval' | 'client_tool';
  /** Model calls made so far in the run. */
  step: number;
  maxSteps: number;
  /** Usage of the uncommitted messages, and of the whole run. */
  segmentUsage: Usage;
  runUsage: Usage;
  /** Which turn of the run paused (a steered prompt opens the next one); absent in states stored before. */
  turn?: number;
  /**
   * Set by the decision that left nothing awaited: who resumed the run (its continuation acts in their scope)
   * and how many executions the run had had then (a later execution than the next one is a takeover).
   */
  resumed?: { by: Actor; attempts: number };
  /** The trace context of the execution that paused (OpenTelemetry on): the one that resumes links to it. */
  trace?: TraceCarrier;
}

/** Ids of the tool uses still waiting for a decision. */
export function awaitingIds(state: Pick<PendingState, 'calls'>): string[] {
  return state.calls.filter((c) => c.needsDecision && !c.decision).map((c) => c.block.id);
}

export function isPendingState(value: unknown): value is PendingState {
  const v = value as Partial<PendingState> | null;
  return !!v && v.version === 1 && Array.isArray(v.messages) && Array.isArray(v.calls);
}
