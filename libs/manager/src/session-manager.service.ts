// Sessions as a population: create, open, close, delete, list (with the `live` filter), rename and other state
// changes, a read that describes a session without opening it, where sessions are live in the deployment
// (/v1/live) and the activity feed. The live sessions of this process (LiveSessions) are its own: their presence
// in the live registry, their opened/closed announcements and the idle shutdown. Commands on one session go to
// SessionService, which reaches live sessions through the LiveSessionHost port this layer implements.

import { type ActivityEvent, type InFlight, type Scope, type SessionInfo } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import type { LiveEntry, Unsubscribe } from '@canopy/realtime';
import type {
  CreateSessionInput,
  ListSessionsQuery,
  SessionPage,
  SessionRecord,
  SessionStatePatch,
} from '@canopy/store';
import {
  LiveSession,
  checkOptsFor,
  summaryModelOf,
  checkModelFor,
  checkTools,
  modelContext,
  reconcile,
  toSessionInfo,
  type RunDuties,
  type SessionEngineDeps,
  type SessionPublisher,
  type SessionService,
  type QueuedPromptView,
  type StartOptions,
} from '@canopy/session';
import { resolveFilter, type CatalogFilter } from './catalog/catalog-filter';
import type { LiveSessions } from './live-sessions';

export type OpenMode = 'controller' | 'observer';

export interface OpenResult {
  live: LiveSession;
  /** The session as stored after the open. */
  session: SessionRecord;
  /** `started`: the open made the session live; `existing`: it was live already (here or elsewhere). */
  opened: 'started' | 'existing';
  /** Where each reconciled field came from: the persisted state or the start options. */
  resolution: { model: 'persisted' | 'start'; system: 'persisted' | 'start'; opts: 'persisted' | 'start' };
  /** Prompts waiting their turn, as SessionDescription's. */
  queued: QueuedPromptView[];
}

/** A session as a read shows it: its record, its subscribers across the deployment and the run in flight. */
export interface SessionDescription {
  record: SessionRecord;
  live: { controllers: number; observers: number } | null;
  inFlight: InFlight | null;
  /** Prompts waiting their turn (ifBusy enqueue / interrupt / rollback), in order. */
  queued: QueuedPromptView[];
}

export class SessionManager {
  constructor(
    private readonly deps: SessionEngineDeps,
    private readonly sessions: SessionService,
    private readonly duties: RunDuties,
    private readonly live: LiveSessions,
    private readonly publisher: SessionPublisher,
  ) {}

  /**
   * A new session. One created without `opts.context` takes the tenant's default context policy, one without
   * `opts.mcpServers` its default MCP servers, if it set them (copied into its opts: the session shows what it runs
   * with, and a later change of a default leaves it).
   */
  async create(scope: Scope, given: CreateSessionInput): Promise<SessionInfo> {
    const input = await this.withTenantDefaults(scope.tenantId, given);
    await checkModelFor(this.deps, scope.tenantId, input.model);
    checkTools(this.deps.tools, input.tools ?? [], input.opts);
    await checkOptsFor(this.deps.tools, scope.tenantId, input.opts);
    const summaryModel = summaryModelOf(input.opts);
    if (summaryModel)
      await checkModelFor(this.deps, scope.tenantId, summaryModel, 'opts.context.summaryModel');
    const record = await this.deps.store.create(scope, {
      ...input,
      userId: scope.userId ?? input.userId ?? null,
    });
    return toSessionInfo(record);
  }

  private async withTenantDefaults(tenantId: string, input: CreateSessionInput): Promise<CreateSessionInput> {
    const takesContext = input.opts?.context === undefined;
    const takesServers = input.opts?.mcpServers === undefined;
    if (!this.deps.tenantDefaults || (!takesContext && !takesServers)) return input;
    const defaults = await this.deps.tenantDefaults.defaultsOf(tenantId);
    const taken: Record<string, unknown> = {};
    if (takesContext && defaults.context) taken.context = defaults.context;
    if (takesServers && defaults.mcpServers?.length) {
      // A server deleted since the default was set is left out, not refused: the default must not block creation.
      const known = await this.deps.tools.mcpServerNames(tenantId);
      const servers = defaults.mcpServers.filter((name) => known.has(name));
      if (servers.length > 0) taken.mcpServers = servers;
    }
    return Object.keys(taken).length > 0 ? { ...input, opts: { ...input.opts, ...taken } } : input;
  }

  /**
   * A session as a read shows it. A read changes nothing: a session that is not live in this process is described
   * from the store and the event log through a transient view (never registered, announced or kept), and its
   * subscribers are counted across the deployment.
   */
  async describe(scope: Scope, id: string): Promise<SessionDescription> {
    // The queue before the record, in one transaction: a drain starts the head's run, then takes it out of the
    // queue, so this order never shows an idle session whose next prompt has already left the queue (read the other
    // way round, or side by side, a read could straddle the drain and answer idle with nothing queued while the run
    // was starting). Read in the caller's scope: another user's session answers not_found, before anything is
    // returned.
    const { record, queued } = await this.sessions.getWithQueue(scope, id);
    return { record, ...(await this.liveState(scope, record)), queued };
  }

  /** Subscribers and the run in flight of a session, without opening it live here. */
  private async liveState(
    scope: Scope,
    record: SessionRecord,
  ): Promise<Pick<SessionDescription, 'live' | 'inFlight'>> {
    const id = record.id;
    const local = this.live.get(scope.tenantId, id);
    if (local) {
      return {
        live: { controllers: local.controllers, observers: local.observers },
        inFlight: local.inFlight,
      };
    }
    const entry = await this.deps.registry.get(scope.tenantId, id).catch(() => null);
    const live = entry ? { controllers: entry.controllers, observers: entry.observers } : null;
    if (record.status === 'idle') return { live, inFlight: null };
    const view = await LiveSession.open(this.deps, scope.tenantId, id, {
      onIdle: () => undefined,
      onPresence: () => undefined,
    });
    if (!view) throw CanopyException.notFound('session');
    try {
      return { live, inFlight: view.inFlight };
    } finally {
      await view.close('described');
    }
  }

  /**
   * A page of the caller's sessions. The `live` filter is answered from the live registry (sessions live anywhere
   * in the deployment) before the store pages, so a page is never emptied after the fact. A user sees only their
   * own sessions: a filter naming someone else matches nothing (it is not replaced).
   */
  async list(scope: Scope, query: ListSessionsQuery & CatalogFilter): Promise<SessionPage> {
    const { limit, cursor, ...rest } = query;
    const filter = await resolveFilter(scope, rest, this.deps.registry);
    if (!filter) return { data: [], nextCursor: null };
    const userId = scope.userId ?? filter.userId;
    return this.deps.store.list(scope, {
      limit,
      cursor,
      ...filter,
      ...(userId !== undefined ? { userId } : {}),
    });
  }

  /**
   * Changes title, model, system, opts, tools and metadata. Model, system, opts and tools are idle-only. A title
   * always broadcasts `title`; any other field broadcasts `state`; a write (`store`) happens only on change.
   */
  async update(scope: Scope, id: string, patch: SessionStatePatch): Promise<SessionInfo> {
    if (patch.model !== undefined) await checkModelFor(this.deps, scope.tenantId, patch.model);
    const current = await this.sessions.get(scope, id);
    if (patch.tools !== undefined || patch.opts !== undefined) {
      checkTools(this.deps.tools, patch.tools ?? current.tools, patch.opts ?? current.opts);
    }
    if (patch.opts !== undefined) {
      await checkOptsFor(this.deps.tools, scope.tenantId, patch.opts);
      const summaryModel = summaryModelOf(patch.opts);
      if (summaryModel)
        await checkModelFor(this.deps, scope.tenantId, summaryModel, 'opts.context.summaryModel');
    }
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
   * Stops serving the session live everywhere (stored data untouched; idempotent). Never loses work: with a run in
   * flight it answers session_busy (cancel first, or close once the run ends); a paused run keeps waiting for its
   * decision.
   */
  async close(scope: Scope, id: string): Promise<void> {
    const session = await this.sessions.get(scope, id);
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

  /** Deletes the session with its tree and runs; a run in flight is stopped wherever it executes first. */
  async delete(scope: Scope, id: string): Promise<void> {
    const session = await this.sessions.get(scope, id);
    if (session.status === 'busy' && session.activeRunId)
      await this.sessions.stopRun(session.activeRunId, 'deleted');
    await this.deps.control.closeEverywhere(scope.tenantId, id, 'delete');
    if (!(await this.deps.store.delete(scope, id))) throw CanopyException.notFound('session');
    await this.deps.bus.forget(scope.tenantId, id);
  }

  /**
   * Opens a stored session live. A controller's start options are reconciled with the persisted state by the load
   * table (the persisted model wins while usable; system and opts from the start options win) and the result
   * persisted through `update` (a `state` event reports it; idle-only when something is given); an observer opens
   * it as it is. `opened`: whether it was live anywhere in the deployment before.
   */
  async open(
    scope: Scope,
    id: string,
    start: StartOptions = {},
    mode: OpenMode = 'controller',
  ): Promise<OpenResult> {
    const session = await this.sessions.get(scope, id);
    const wasLive =
      this.live.get(scope.tenantId, id) !== undefined ||
      (await this.deps.registry.get(scope.tenantId, id).catch(() => null)) !== null;
    let resolution: OpenResult['resolution'] = { model: 'persisted', system: 'persisted', opts: 'persisted' };
    if (mode === 'controller') {
      const context = await modelContext(this.deps, scope.tenantId, [session.model, start.model]);
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
    const live = await this.sessions.liveSession(scope, id);
    // The queue before the record, in one transaction, as in describe.
    const { record, queued } = await this.sessions.getWithQueue(scope, id);
    return {
      live,
      session: record,
      opened: wasLive ? 'existing' : 'started',
      resolution,
      queued,
    };
  }

  /** The live sessions of the caller's tenant in the whole deployment (a user's own with a user scope). */
  async whereLive(scope: Scope): Promise<LiveEntry[]> {
    const entries = await this.deps.registry.list(scope.tenantId);
    return entries.filter((e) => scope.userId === undefined || e.userId === scope.userId);
  }

  /** The live sessions of every tenant (the admin's view, and the api's own sampling). */
  whereLiveEverywhere(): Promise<LiveEntry[]> {
    return this.deps.registry.list(null);
  }

  /** Where a live session is served; not_found when it is not live (or not the caller's). */
  async whereis(scope: Scope, id: string): Promise<LiveEntry> {
    const entry = await this.deps.registry.get(scope.tenantId, id);
    if (!entry || (scope.userId !== undefined && entry.userId !== scope.userId)) {
      throw CanopyException.notFound('live session');
    }
    return entry;
  }

  /** Follows the activity feed of a tenant, or of every tenant (null). */
  followActivity(tenantId: string | null, listener: (event: ActivityEvent) => void): Promise<Unsubscribe> {
    return this.deps.feed.subscribe(tenantId, listener);
  }

  /** The sessions live in this process now (metrics). */
  liveHere(): LiveSession[] {
    return this.live.list();
  }

  /**
   * Stops this process's part: runs stop executing (SessionService.stopExecuting owns the grace period), then the
   * live sessions here close (each withdrawn from the registry, announced closed when it was the last presence).
   */
  async shutdown(): Promise<void> {
    await this.duties.stopExecuting();
    await this.live.closeAll('shutdown');
  }
}
