// Decisions on a paused run: the `resume` command (a decision for one awaited tool use, named by its id unless it
// is the only one) and their expiry. Pausing sets a durable timer per pause; when it fires and the run still
// awaits any of that pause's tool uses, those are rejected under the system scope and the run continues, so a
// forgotten approval never leaves a session paused for ever. Each decision records who took it (an approved tool
// runs in its approver's scope) and the one that leaves nothing awaited who resumed the run (its continuation
// acts in their scope). Decisions are compare-and-set on the stored pending state: a decision and an expiry
// racing never both land on the same tool use.

import { actorOf, systemScope, type Actor, type Scope } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import { awaitingIds, isPendingState, type Decision, type PendingState } from '@canopy/agent';
import type { DecisionTimer } from '@canopy/queue';
import type { JsonObject, RunStore, SessionRecordStore } from '@canopy/store';
import type { SessionEngineDeps } from './session-deps';

/** What decisions use: the paused run, the queue that resumes it, the timers that expire it. */
export type DecisionsDeps = Pick<SessionEngineDeps, 'queue' | 'timers' | 'logger'> & {
  store: Pick<SessionRecordStore, 'get'> & Pick<RunStore, 'getRun' | 'unfinishedRuns' | 'updatePausedRun'>;
  settings: Pick<SessionEngineDeps['settings'], 'decisionTimeoutMs'>;
};
import type { SessionPublisher } from './session-publisher';

export interface ResumeInput {
  toolUseId?: string;
  decision: Decision;
}

/** How often a decision is retried on top of a concurrent one before the caller is asked to try again. */
const DECIDE_ATTEMPTS = 5;

export class Decisions {
  constructor(
    private readonly deps: DecisionsDeps,
    private readonly publisher: SessionPublisher,
  ) {}

  /**
   * Records a decision for the paused session's run; when none is awaited any more, the run continues.
   * `beforeWrite` runs once the decision is known to be valid (the command opens the session live there).
   */
  async resume(
    scope: Scope,
    id: string,
    input: ResumeInput,
    beforeWrite: () => Promise<unknown>,
  ): Promise<{ runId: string }> {
    const actor = actorOf(scope);
    const runId = await this.decide(
      scope,
      id,
      null,
      (pending) => applyDecision(pending, input, actor),
      beforeWrite,
    );
    if (!runId) throw new CanopyException('not_paused', 'the session is not paused');
    return { runId };
  }

  /** Sets the expiry of a pause (the tool uses it awaits). */
  async armExpiry(tenantId: string, sessionId: string, runId: string, pending: PendingState): Promise<void> {
    const timer = expiryTimer(tenantId, sessionId, runId, pending);
    if (timer) await this.deps.timers.set(timer, this.deps.settings.decisionTimeoutMs);
  }

  /**
   * The expiry of a pause fired: the tool uses of that pause still awaited are rejected and the run continues.
   * Nothing when the run moved on (resumed, cancelled, or paused again on other tool uses).
   */
  async expire(timer: DecisionTimer): Promise<void> {
    const ms = this.deps.settings.decisionTimeoutMs;
    const reason = `no decision within ${ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`} (expired)`;
    const runId = await this.decide(
      systemScope(timer.tenantId),
      timer.sessionId,
      timer.runId,
      (pending) => {
        const expired = awaitingIds(pending).filter((toolUseId) => timer.toolUseIds.includes(toolUseId));
        if (expired.length === 0) return null;
        return expired.reduce(
          (state, toolUseId) =>
            applyDecision(state, { toolUseId, decision: { type: 'reject', reason } }, { type: 'system' }),
          pending,
        );
      },
      () => Promise.resolve(),
    ).catch((err: unknown) => {
      // The session or run is gone, or not paused any more: the expiry has nothing left to do.
      if (err instanceof CanopyException && (err.code === 'not_found' || err.code === 'not_paused'))
        return null;
      throw err;
    });
    if (runId) {
      this.deps.logger.warn('decisions expired', {
        sessionId: timer.sessionId,
        runId,
        toolUseIds: timer.toolUseIds,
      });
    }
  }

  /**
   * Sets again the expiries of runs paused before this process started (embedded timers do not survive a
   * restart; durable ones are left where they are). Each gets a full timeout from now.
   */
  async rearmExpiries(): Promise<number> {
    let armed = 0;
    for (const r of await this.deps.store.unfinishedRuns()) {
      if (r.status !== 'paused') continue;
      const run = await this.deps.store.getRun(systemScope(r.tenantId), r.runId);
      if (!run?.pending || !isPendingState(run.pending)) continue;
      const timer = expiryTimer(r.tenantId, r.sessionId, r.runId, run.pending);
      if (!timer) continue;
      await this.deps.timers.ensure(timer, this.deps.settings.decisionTimeoutMs);
      armed++;
    }
    return armed;
  }

  /**
   * Applies `change` to the pending state of the session's paused run (of `runId` when given) and stores it if
   * nobody changed it meanwhile (else decides again on top). Returns the run, or null when `change` found
   * nothing to do. Throws not_paused when the session has no paused run (or another one).
   */
  private async decide(
    scope: Scope,
    id: string,
    runId: string | null,
    change: (pending: PendingState) => PendingState | null,
    beforeWrite: () => Promise<unknown>,
  ): Promise<string | null> {
    for (let attempt = 0; attempt < DECIDE_ATTEMPTS; attempt++) {
      const session = await this.deps.store.get(scope, id);
      if (!session) throw CanopyException.notFound('session');
      if (session.status !== 'paused' || !session.activeRunId) throw notPaused();
      if (runId !== null && session.activeRunId !== runId) throw notPaused();
      const run = await this.deps.store.getRun(systemScope(scope.tenantId), session.activeRunId);
      if (!run?.pending || !isPendingState(run.pending)) throw notPaused();
      const changed = change(run.pending);
      if (!changed) return null;
      const resume = awaitingIds(changed).length === 0;
      // Who resumes the run acts its continuation; the executions it has had tell a takeover from the next one.
      const next: PendingState = resume
        ? { ...changed, resumed: { by: actorOf(scope), attempts: run.attempts } }
        : changed;
      await beforeWrite();
      const result = await this.deps.store.updatePausedRun(scope, {
        sessionId: id,
        runId: run.id,
        expectedPending: run.pending,
        pending: next as unknown as JsonObject,
        resume,
      });
      if (!result.ok) {
        if (result.reason === 'conflict') continue; // another decision landed first: decide again on top of it
        throw result.reason === 'not_found' ? CanopyException.notFound('session') : notPaused();
      }
      if (resume) {
        await this.publisher.publish(scope.tenantId, id, [
          { type: 'status', data: { status: 'busy', runId: run.id } },
        ]);
        await this.deps.queue.enqueue({
          tenantId: scope.tenantId,
          sessionId: id,
          runId: run.id,
          resumedAt: run.pending.step,
        });
      }
      return run.id;
    }
    throw new CanopyException('session_busy', 'too many concurrent decisions; try again');
  }
}

/** The expiry timer of a pause, or null when it awaits nothing. */
export function expiryTimer(
  tenantId: string,
  sessionId: string,
  runId: string,
  pending: PendingState,
): DecisionTimer | null {
  const toolUseIds = awaitingIds(pending);
  if (toolUseIds.length === 0) return null;
  return { kind: 'decision-expiry', tenantId, sessionId, runId, toolUseIds };
}

/**
 * The pending state with one decision, taken by `actor`, applied to the named tool use — or, without a name, to
 * the only one awaited (with several awaited, which one is meant is the caller's to say: bad_request naming them).
 */
export function applyDecision(pending: PendingState, input: ResumeInput, actor: Actor): PendingState {
  const awaiting = awaitingIds(pending);
  if (input.toolUseId && !awaiting.includes(input.toolUseId)) {
    throw CanopyException.badRequest(`tool use ${input.toolUseId} is not awaiting a decision`, {
      field: 'toolUseId',
      awaiting,
    });
  }
  if (!input.toolUseId && awaiting.length > 1) {
    throw CanopyException.badRequest(
      `${awaiting.length} tool uses await a decision (${awaiting.join(', ')}): name one with toolUseId`,
      { field: 'toolUseId', awaiting },
    );
  }
  const targets = input.toolUseId ? [input.toolUseId] : awaiting;
  return {
    ...pending,
    calls: pending.calls.map((call) => {
      if (!targets.includes(call.block.id)) return call;
      if (call.kind === 'client' && input.decision.type === 'execute') {
        throw CanopyException.badRequest(
          `${call.block.name} is a client tool: answer it with a result or a reject`,
          { field: 'decision' },
        );
      }
      return { ...call, decision: input.decision, decidedBy: actor };
    }),
  };
}

function notPaused(): CanopyException {
  return new CanopyException('not_paused', 'the session is not paused');
}
