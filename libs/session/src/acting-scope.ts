// Who acts an execution of a run (a turn carries the scope of the caller acting it). The caller who
// started the run acts its first execution; the caller whose decision resumed a paused run acts the execution
// that continues it (approved tools then run in their approver's scope, a steered turn in its sender's). An
// execution after those — a takeover once a worker died, a hand-back at shutdown — is recovery: the system acts
// it, like a run with no recorded caller.

import { scopeOfActor, systemScope, type Scope } from '@canopy/core';
import { isPendingState } from '@canopy/agent';
import type { RunRecord } from '@canopy/store';

export interface ActingScope {
  scope: Scope;
  /** False for recovery: later callers (approvers, senders of steered prompts) do not act their parts either. */
  callerScopes: boolean;
}

export function actingScope(
  tenantId: string,
  run: Pick<RunRecord, 'pending' | 'attempts' | 'actor'>,
): ActingScope {
  const system = { scope: systemScope(tenantId), callerScopes: false };
  const pending = run.pending && isPendingState(run.pending) ? run.pending : null;
  if (pending) {
    // Resumed: the execution right after the resume (one more than the run had then) is the resumer's.
    const resumed = pending.resumed;
    if (!resumed || run.attempts > resumed.attempts + 1) return system;
    return { scope: scopeOfActor(tenantId, resumed.by), callerScopes: true };
  }
  if (run.attempts > 1 || !run.actor) return system;
  return { scope: scopeOfActor(tenantId, run.actor), callerScopes: true };
}
