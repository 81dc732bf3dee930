// Double texting (LangGraph's multitask strategies) for prompts sent to a busy session: `enqueue` waits its turn
// (first in, first out), `interrupt` stops the run in flight, which keeps what it had (its prompt, its completed
// steps and the text it was streaming, marked `interrupted`: the run executor's end of it), and goes next after
// it, `rollback` cancels it (nothing of it kept) and goes where that run's prompt was attached, so the cancelled
// run's messages leave the active path (kept in the tree, as every branch is). The queue is in the database (queued_prompts): it survives
// any process, a worker crash included, and any process drains it — after a run ends there, after a prompt is
// queued there, and on the lost-run sweep. The run that takes an entry gets the entry's id, so a second start of
// the same entry (two processes draining at once, or one that died before removing it) fails on the run's primary
// key: each queued prompt runs once. The session's own compare-and-set on its status keeps one run at a time.

import { randomUUID } from 'node:crypto';
import { CanopyException } from '@canopy/common';
import { scopeOfActor, systemScope, type MessageContent, type NodeId, type Scope } from '@canopy/core';
import type { PromptQueueStore, QueueMode, QueuedPromptRecord, SessionRecordStore } from '@canopy/store';
import type { SessionEngineDeps } from './session-deps';

/** What the prompt queue uses: the session's status and its queue, quotas, the log. */
export type PromptQueueDeps = Pick<SessionEngineDeps, 'admission' | 'logger'> & {
  store: Pick<SessionRecordStore, 'get'> & PromptQueueStore;
};
import type { SessionPublisher } from './session-publisher';

export interface QueuedPromptInput {
  content: MessageContent;
  maxSteps?: number;
}

/** A queued prompt as GET /v1/sessions/:id lists it. */
export interface QueuedPromptView {
  /** The queued prompt's id, which its run will have. */
  id: string;
  mode: QueueMode;
  content: MessageContent;
  createdAt: string;
}

/** What the queue needs of the session commands (SessionService's, with the run id the entry gives its run). */
export interface QueueCommands {
  prompt(scope: Scope, id: string, input: QueuedPromptInput, runId: string): Promise<{ runId: string }>;
  /** An edit from an assistant node (or a new root for null) with the prompt as its new user message. */
  branchAt(
    scope: Scope,
    id: string,
    nodeId: NodeId | null,
    input: QueuedPromptInput,
    runId: string,
  ): Promise<{ runId: string }>;
  /**
   * Stops the session's run in flight if it is still `runId`: `interrupted` commits what it had, `cancelled`
   * nothing.
   */
  cancelRun(scope: Scope, id: string, runId: string, reason: 'cancelled' | 'interrupted'): Promise<void>;
}

export class PromptQueue {
  constructor(
    private readonly deps: PromptQueueDeps,
    private readonly publisher: SessionPublisher,
    private readonly commands: QueueCommands,
  ) {}

  /**
   * Queues a prompt and starts the queue's head if the session is idle. Answers the prompt's id (its run's id)
   * and whether it still waits.
   */
  async send(
    scope: Scope,
    id: string,
    mode: QueueMode,
    input: QueuedPromptInput,
  ): Promise<{ runId: string; queued: boolean }> {
    // Over quota is said now, not when its turn comes.
    await this.deps.admission?.admit(scope, id);
    const entryId = randomUUID();
    const session = mode === 'enqueue' ? null : await this.deps.store.get(scope, id);
    const cancelling = session?.status !== 'idle' ? (session?.activeRunId ?? null) : null;
    const stored = await this.deps.store.enqueuePrompt(scope, id, {
      id: entryId,
      mode,
      input: {
        content: input.content,
        ...(input.maxSteps !== undefined ? { maxSteps: input.maxSteps } : {}),
        ...(mode === 'rollback' && cancelling ? { cancelledRunId: cancelling } : {}),
      },
    });
    if (!stored) throw CanopyException.notFound('session');
    if (cancelling) {
      await this.commands.cancelRun(
        scope,
        id,
        cancelling,
        mode === 'interrupt' ? 'interrupted' : 'cancelled',
      );
    }
    const started = await this.drain(scope.tenantId, id, entryId);
    return { runId: entryId, queued: started !== entryId };
  }

  /** Takes a queued prompt out before its turn (not_found once its run started, or for another's). */
  async cancel(scope: Scope, id: string, queueId: string): Promise<void> {
    if (!(await this.deps.store.dequeuePrompt(scope, id, queueId)))
      throw CanopyException.notFound('queued prompt');
  }

  /**
   * Starts the queue's head if the session is idle; answers the run started (its entry's id), or null. An entry
   * that cannot run (over quota, its attach point gone) is dropped with an `error` event naming it, or, when it is
   * `sent` (the entry being sent now, which went first), with that error thrown to its sender.
   */
  async drain(tenantId: string, id: string, sent?: string): Promise<string | null> {
    const system = systemScope(tenantId);
    for (;;) {
      const [head] = await this.deps.store.queuedPrompts(system, id);
      if (!head) return null;
      try {
        await this.start(tenantId, id, head);
        await this.deps.store.dequeuePrompt(system, id, head.id);
        return head.id;
      } catch (err) {
        const code = err instanceof CanopyException ? err.code : null;
        // A run in flight: its end drains the queue. The tenant's runs in flight at their limit, or anything not
        // the prompt's own fault: tried again later (a run's end, the sweep).
        if (code === 'session_busy' || code === 'session_paused' || code === 'rate_limited') return null;
        if (code === null || code === 'unavailable' || code === 'internal') throw err;
        // already_exists: an earlier drain started it and did not get to take it out.
        await this.deps.store.dequeuePrompt(system, id, head.id);
        // The prompt being sent, refused as it went (a runs quota spent by a concurrent start): its sender hears it.
        if (head.id === sent && code !== 'already_exists') throw err;
        if (code !== 'already_exists') {
          await this.publisher.publish(tenantId, id, [
            { type: 'error', data: { runId: head.id, code, message: (err as Error).message } },
          ]);
        }
      }
    }
  }

  /** Drains every idle session that has queued prompts (what a process that died left waiting); never throws. */
  async sweep(): Promise<number> {
    let started = 0;
    try {
      for (const { tenantId, sessionId } of await this.deps.store.idleSessionsWithQueue()) {
        if (await this.drain(tenantId, sessionId).catch(() => null)) started++;
      }
    } catch (err) {
      this.deps.logger.warn('queued prompt sweep failed', { err });
    }
    return started;
  }

  /** Drains in the background (after a run ended): failures wait for the sweep. */
  drainLater(tenantId: string, id: string): void {
    void this.drain(tenantId, id).catch((err: unknown) =>
      this.deps.logger.warn('queued prompt not started', { err, sessionId: id }),
    );
  }

  private async start(tenantId: string, id: string, head: QueuedPromptRecord): Promise<void> {
    const scope = head.actor ? scopeOfActor(tenantId, head.actor) : systemScope(tenantId);
    const input: QueuedPromptInput = {
      content: head.input.content as MessageContent,
      ...(typeof head.input.maxSteps === 'number' ? { maxSteps: head.input.maxSteps } : {}),
    };
    const cancelled = typeof head.input.cancelledRunId === 'string' ? head.input.cancelledRunId : null;
    if (head.mode === 'rollback' && cancelled) {
      const attach = await this.deps.store.attachPointOf(systemScope(tenantId), id, cancelled);
      // Nothing of the cancelled run on the active path: its prompt would have gone where a prompt goes now.
      if (attach) {
        await this.commands.branchAt(scope, id, attach.nodeId, input, head.id);
        return;
      }
    }
    await this.commands.prompt(scope, id, input, head.id);
  }
}

/** A queued prompt as the API shows it. */
export function queuedPromptView(entry: QueuedPromptRecord): QueuedPromptView {
  return {
    id: entry.id,
    mode: entry.mode,
    content: entry.input.content as MessageContent,
    createdAt: entry.createdAt.toISOString(),
  };
}
