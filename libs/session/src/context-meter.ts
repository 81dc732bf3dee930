// The token meter: once a run has ended, what the next run from the session's head would send (contextView: the
// active path under the session's context policy, with the system prompt and the tools), kept with the session and
// published as a `context` event of kind `meter`, so GET /v1/sessions/:id, a subscriber's snapshot and the live
// stream all show it. Counted from the live tree: a session not live in this process is skipped rather than
// loaded whole for a figure; one live beyond LIVE_PATH_NODES (its live tree is its path's recent part) reads its tree. Message counts are remembered (tokens.ts), so after a run only its new messages are
// encoded.

import { contextPolicyOf, contextView, modelLimits, type ToolRegistry } from '@canopy/agent';
import type { CanopyConfig } from '@canopy/common';
import {
  Tree,
  type ContextMeter,
  type ContextSummary,
  type Message,
  type NodeId,
  type Scope,
  type SessionInfo,
} from '@canopy/core';
import type { ContextSummaryStore, SessionRecordStore } from '@canopy/store';
import type { LiveSessionHost } from './live-session-host';
import type { EngineSettings, SessionEngineDeps } from './session-deps';
import { enabledServerTools } from './session-input';
import type { SessionPublisher } from './session-publisher';

/** What the meter uses: the tool registry (the tools' schemas count), the store that keeps it, the model windows. */
export type ContextMeterDeps = Pick<SessionEngineDeps, 'tools' | 'logger'> & {
  store: Pick<SessionRecordStore, 'saveContextMeter' | 'loadTree'> & Pick<ContextSummaryStore, 'summariesOn'>;
  settings: Pick<EngineSettings, 'modelLimits'>;
};

export interface ContextMeterInput {
  /** The session's committed tree; the meter is of its head. */
  tree: Tree;
  session: Pick<SessionInfo, 'model' | 'system' | 'opts' | 'tools'>;
  tools: ToolRegistry;
  /** The deployment's MODEL_LIMITS (absent: the built-in table alone). */
  modelLimits?: CanopyConfig['modelLimits'];
  /** Summaries stored against nodes of the path (context policy `summarize`): the nearest one is in use. */
  summaries?: readonly ContextSummary[];
}

const NO_CONFIGURED_LIMITS: CanopyConfig['modelLimits'] = new Map();

/** The meter of the tree's head: the tokens a run from it would send, against the model's window. */
export function contextMeterOf(input: ContextMeterInput): ContextMeter {
  const { tree, ...rest } = input;
  return contextMeterOfPath({
    ...rest,
    path: tree.path.map((id) => ({ id, message: tree.getNode(id)!.message })),
  });
}

/** The meter of a path's last node (the head a run leaves). */
export function contextMeterOfPath(
  input: Omit<ContextMeterInput, 'tree'> & { path: Array<{ id: NodeId; message: Message }> },
): ContextMeter {
  const { path, session } = input;
  const view = contextView({
    nodeId: path.at(-1)?.id ?? null,
    path,
    model: session.model,
    system: session.system,
    opts: session.opts,
    tools: input.tools.specsFor(enabledServerTools(session.opts), session.tools),
    limits: modelLimits(session.model, session.opts, input.modelLimits ?? NO_CONFIGURED_LIMITS),
    ...(input.summaries ? { summaries: input.summaries } : {}),
  });
  return {
    tokens: view.tokens,
    window: view.window,
    strategy: view.strategy,
    summarizedThrough: view.summary?.throughNodeId ?? null,
  };
}

async function loadedTree(deps: ContextMeterDeps, scope: Scope, sessionId: string): Promise<Tree | null> {
  const loaded = await deps.store.loadTree(scope, sessionId);
  if (!loaded) return null;
  const { session, nodes } = loaded;
  return Tree.hydrate({ nodes, path: session.path, cursors: session.cursors, nextId: session.nextNodeId });
}

/**
 * After run `runId` of a session ended (completed, cancelled or failed): counts the meter from the session's live
 * tree here, keeps it with the session, then publishes it (kept first, so a reader told by the event finds it
 * stored). Skipped when the session is not live here, or its live state has not seen the run end yet (its tree
 * would not be the one the run left); not published when the session moved to another head meanwhile (a newer
 * meter follows). Never throws: a meter is not worth failing a run's end for.
 */
export async function meterAfterRun(
  deps: ContextMeterDeps,
  publisher: SessionPublisher,
  live: LiveSessionHost,
  scope: Scope,
  sessionId: string,
  runId: string,
  /** The meter the run's last commit kept with the session already: published as it is, not counted again. */
  carried: ContextMeter | null = null,
  /**
   * A meter the run counted of the head it left (from what it read of the path, the run executor's): kept with the
   * session and published, no tree read.
   */
  counted: { meter: ContextMeter; head: NodeId | null } | null = null,
): Promise<void> {
  try {
    if (carried) {
      await publisher.publish(scope.tenantId, sessionId, [
        { type: 'context', data: { runId, kind: 'meter', ...carried } },
      ]);
      return;
    }
    if (counted) {
      await keepAndPublish(deps, publisher, scope, sessionId, runId, counted.head, counted.meter);
      return;
    }
    const session = live.get(scope.tenantId, sessionId);
    if (!session || session.isClosed || session.inFlight?.runId === runId) return;
    // A live session beyond LIVE_PATH_NODES holds only its path's recent part: the whole path is read.
    const tree = session.holdsWholeTree ? session.tree : await loadedTree(deps, scope, sessionId);
    if (!tree) return;
    // A session that summarizes: the summaries of its path (one small read) say what the next run sends.
    const summaries =
      contextPolicyOf(session.info.opts).strategy === 'summarize'
        ? await deps.store.summariesOn(scope, sessionId, tree.path)
        : undefined;
    const meter = contextMeterOf({
      tree,
      session: session.info,
      tools: deps.tools,
      ...(deps.settings.modelLimits ? { modelLimits: deps.settings.modelLimits } : {}),
      ...(summaries ? { summaries } : {}),
    });
    await keepAndPublish(deps, publisher, scope, sessionId, runId, tree.head, meter);
  } catch (err) {
    deps.logger.warn('context meter failed', { err, sessionId, runId });
  }
}

/** Keeps a meter with the session (unless it moved to another head meanwhile), then publishes it. */
async function keepAndPublish(
  deps: ContextMeterDeps,
  publisher: SessionPublisher,
  scope: Scope,
  sessionId: string,
  runId: string,
  head: NodeId | null,
  meter: ContextMeter,
): Promise<void> {
  const kept = await deps.store.saveContextMeter(scope, sessionId, head, meter).catch((err: unknown) => {
    // Unsaved (the database is away): the subscribers still see it; the next run's meter is saved.
    deps.logger.warn('context meter not saved', { err, sessionId, runId });
    return true;
  });
  if (!kept) return;
  await publisher.publish(scope.tenantId, sessionId, [
    { type: 'context', data: { runId, kind: 'meter', ...meter } },
  ]);
}
