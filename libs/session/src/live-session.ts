// One live session in this process: its state projected from its events, its subscribers (controllers keep it
// alive, observers only watch), the runs callers wait for, and its idle shutdown. A subscription starts with a
// snapshot taken atomically with the start of its stream (or, with `after`, the exact events it missed) and then
// receives every later event once, in seq order. Its state is bounded (LIVE_PATH_NODES): it keeps the active path's
// recent part; when an event moves the path onto nodes it does not hold, it reads them from the store, and a new
// subscriber's snapshot waits for that read.

import {
  DEFAULT_LIVE_PATH_NODES,
  LiveState,
  RUN_EVENT_TYPES,
  systemScope,
  type SessionEvent,
  type SessionSnapshot,
  type InFlight,
} from '@canopy/core';
import { isPendingState, awaitingIds } from '@canopy/agent';
import type { Unsubscribe } from '@canopy/realtime';
import type { RunRecord, RunStore, SessionRecord, SessionRecordStore } from '@canopy/store';
import { RunTracker, type RunResult } from './run-tracker';
import type { SessionEngineDeps } from './session-deps';

/** What a live session uses: its tree and runs, the event bus it follows. */
export type LiveSessionDeps = Pick<SessionEngineDeps, 'bus' | 'logger'> & {
  store: Pick<SessionRecordStore, 'loadTree'> & Pick<RunStore, 'getRun'>;
  settings: Pick<SessionEngineDeps['settings'], 'idleShutdownMs' | 'resultTtlMs' | 'livePathNodes'>;
};
import { toSessionInfo } from './convert';

export type SubscriberMode = 'controller' | 'observer';

export interface SubscribeOptions {
  mode?: SubscriberMode;
  /** Resume after this seq: the missed events are replayed when the log still has them, else a snapshot. */
  after?: number;
  /** Called once when the live session ends under the subscriber (closed, deleted, idle shutdown). */
  onEnd?: (reason: string) => void;
}

export interface Subscription {
  readonly id: number;
  mode: SubscriberMode;
  /** Changes the mode in place (re-subscribing with another mode). */
  setMode(mode: SubscriberMode): void;
  unsubscribe(): void;
}

interface Subscriber {
  id: number;
  mode: SubscriberMode;
  listener: (event: SessionEvent) => void;
  onEnd?: (reason: string) => void;
  /** Events that arrived while the subscription was still being set up. */
  buffer: SessionEvent[] | null;
  lastSeq: number;
}

export interface LiveSessionHooks {
  /** The session has no controller and no run here: set its idle shutdown to fire after `afterMs`. */
  onIdle(session: LiveSession, afterMs: number): void;
  /** Subscribers or status changed: refresh this instance's presence in the registry. */
  onPresence(session: LiveSession): void;
}

/**
 * What the caller opening a session already read in the same transaction as its last change (a run's start:
 * the claimed session row and its run), so opening need not read them again.
 */
export interface KnownState {
  /** The session row as claimed; with nextNodeId 1 its tree is empty, so nothing at all is read. */
  session: SessionRecord;
  /** The run that claimed it. */
  run: RunRecord;
}

let nextSubscriberId = 1;

export class LiveSession {
  private readonly subscribers = new Map<number, Subscriber>();
  private readonly tracker: RunTracker;
  /** Whether the session was idle here (no controller, no run) at the last check: its idle timer is set. */
  private idleArmed = false;
  private closed = false;
  /** The read of nodes the path moved onto (see fillMissing), while one is under way. */
  private filling: Promise<void> | null = null;
  readonly since = new Date();

  private constructor(
    readonly tenantId: string,
    readonly id: string,
    private readonly state: LiveState,
    private readonly deps: LiveSessionDeps,
    private readonly hooks: LiveSessionHooks,
    private unsubscribeBus: Unsubscribe,
    private idleShutdownAfterMs: number | null,
  ) {
    this.tracker = new RunTracker(deps.settings.resultTtlMs);
  }

  /**
   * Loads the session and starts following its events. Events published while loading are buffered and applied
   * after, so nothing falls between the load and the stream. Returns null for an unknown session.
   */
  static async open(
    deps: LiveSessionDeps,
    tenantId: string,
    id: string,
    hooks: LiveSessionHooks,
    known?: KnownState,
  ): Promise<LiveSession | null> {
    const buffered: SessionEvent[] = [];
    let live: LiveSession | null = null;
    const unsubscribe = await deps.bus.subscribe(tenantId, id, (event) => {
      if (live) live.receive(event);
      else buffered.push(event);
    });
    try {
      const scope = systemScope(tenantId);
      // A session that has no node yet and was just claimed by a run: its tree is empty and its row is the one
      // read with the claim (events published since are buffered above, and replayed below).
      const loaded =
        known && known.session.nextNodeId === 1 && known.session.id === id
          ? { session: known.session, nodes: [] }
          : await deps.store.loadTree(scope, id);
      if (!loaded) {
        await unsubscribe();
        return null;
      }
      const { session, nodes } = loaded;
      const replay = await deps.bus.replay(tenantId, id, 0);
      let inFlight: InFlight | null = null;
      // A session that never published: its sequence is fixed now, so that the snapshot's seq is one its first
      // event can be resumed after (`after=<seq>` replays from it).
      let startSeq = replay.lastSeq > 0 ? replay.lastSeq : await deps.bus.anchor(tenantId, id);
      const replayFrom: SessionEvent[] = [];
      if (session.activeRunId) {
        // The run that just claimed the session is known (still busy with it: nothing paused it yet).
        const run =
          known?.run.id === session.activeRunId && session.status === 'busy'
            ? known.run
            : await deps.store.getRun(scope, session.activeRunId);
        inFlight = {
          runId: session.activeRunId,
          kind: run?.kind ?? 'prompt',
          pending: [],
          partial: null,
          awaiting: [],
        };
        if (session.status === 'paused' && run?.pending && isPendingState(run.pending)) {
          const pending = run.pending;
          inFlight.pending = [...pending.messages];
          inFlight.awaiting = pending.calls
            .filter((c) => awaitingIds(pending).includes(c.block.id))
            .map((c) => c.block);
        } else if (session.status === 'busy') {
          // Rebuild the run's uncommitted part from the retained events since its start or last commit.
          const runEvents = replay.events.filter((e) => runIdOf(e) === session.activeRunId);
          const startIdx = lastIndex(
            runEvents,
            (e) => e.type === 'turn' || (e.type === 'status' && e.data.status === 'busy'),
          );
          // No event of the run yet (it is just starting): the loaded state is current, nothing to replay.
          if (startIdx >= 0) {
            const from = runEvents[startIdx]!.seq;
            startSeq = from;
            replayFrom.push(...replay.events.filter((e) => e.seq > from));
          }
        }
      }
      const state = new LiveState({
        info: toSessionInfo(session),
        nodes,
        path: session.path,
        cursors: session.cursors,
        nextNodeId: session.nextNodeId,
        inFlight,
        seq: startSeq,
        pathBound: deps.settings.livePathNodes ?? DEFAULT_LIVE_PATH_NODES,
      });
      for (const e of replayFrom) state.apply(e);
      live = new LiveSession(tenantId, id, state, deps, hooks, unsubscribe, session.idleShutdownAfterMs);
      // A run in flight: waiting for it answers from what it did before this process followed it too.
      if (inFlight && session.status === 'paused') {
        const messages = inFlight.pending.map((message, i) => ({ nodeId: session.nextNodeId + i, message }));
        const awaiting = inFlight.awaiting.map((u) => u.id);
        live.tracker.paused(inFlight.runId, messages, awaiting, Date.now());
      }
      for (const e of replayFrom) live.tracker.observe(e);
      for (const e of buffered) live.receive(e);
      live.fillMissing();
      live.checkIdle();
      return live;
    } catch (err) {
      await unsubscribe();
      throw err;
    }
  }

  get status(): SessionSnapshot['session']['status'] {
    return this.state.status;
  }

  get info(): SessionSnapshot['session'] {
    return this.state.session;
  }

  get seq(): number {
    return this.state.seq;
  }

  /**
   * The committed tree held: the active path's recent part and the versions of its turns (the whole tree when
   * `holdsWholeTree`). Commands that need more read the store.
   */
  get tree() {
    return this.state.committedTree;
  }

  /** Whether `tree` is the session's whole tree and its path the whole active path. */
  get holdsWholeTree(): boolean {
    return this.state.holdsWholeTree;
  }

  get inFlight(): InFlight | null {
    return this.state.runInFlight;
  }

  get controllers(): number {
    return [...this.subscribers.values()].filter((s) => s.mode === 'controller').length;
  }

  get observers(): number {
    return [...this.subscribers.values()].filter((s) => s.mode === 'observer').length;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** No controller and no run here (what starts the idle shutdown); false once closed. */
  get isIdle(): boolean {
    return !this.closed && this.controllers === 0 && this.state.status === 'idle';
  }

  snapshot(): SessionSnapshot {
    return this.state.snapshot();
  }

  setIdleShutdown(ms: number | null): void {
    this.idleShutdownAfterMs = ms;
  }

  /**
   * Subscribes: the first event delivered is a `snapshot` (its seq is the state it reflects) unless `after` can be
   * served from the replay log, in which case exactly the missed events come first. Then every later event.
   */
  async subscribe(
    listener: (event: SessionEvent) => void,
    options: SubscribeOptions = {},
  ): Promise<Subscription> {
    if (this.closed) throw new Error('the live session is closed');
    const sub: Subscriber = {
      id: nextSubscriberId++,
      mode: options.mode ?? 'controller',
      listener,
      onEnd: options.onEnd,
      buffer: [],
      lastSeq: 0,
    };
    this.subscribers.set(sub.id, sub);
    this.changed();
    const current = this.state.seq;
    const after = options.after;
    let initial: SessionEvent[];
    if (after !== undefined && after <= current) {
      const replay = await this.deps.bus.replay(this.tenantId, this.id, after);
      initial = replay.complete ? replay.events : [await this.filledSnapshotEvent()];
    } else {
      initial = [await this.filledSnapshotEvent()];
    }
    // Deliver the start, then what arrived meanwhile, each event once, in order.
    const pending = [...initial, ...(sub.buffer ?? [])];
    sub.buffer = null;
    for (const e of pending) this.deliver(sub, e);
    return {
      id: sub.id,
      get mode() {
        return sub.mode;
      },
      setMode: (mode: SubscriberMode) => {
        sub.mode = mode;
        this.changed();
      },
      unsubscribe: () => {
        if (this.subscribers.delete(sub.id)) this.changed();
      },
    };
  }

  /** Resolves when the run completes, pauses, fails or is cancelled. */
  waitForRun(runId: string): Promise<RunResult> {
    return this.tracker.wait(runId);
  }

  runResult(runId: string): RunResult | null {
    return this.tracker.result(runId);
  }

  /** Stops following the session; subscribers are told why. Idempotent. */
  async close(reason: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const subs = [...this.subscribers.values()];
    this.subscribers.clear();
    for (const s of subs) {
      try {
        s.onEnd?.(reason);
      } catch (err) {
        this.deps.logger.warn('subscriber end handler failed', { err });
      }
    }
    await this.unsubscribeBus();
  }

  /**
   * Reads from the store the nodes the active path moved onto that are not held (a navigation or a rollback onto
   * turns outside the bound), once at a time; again if the path moved meanwhile. Never throws: until they are read
   * the view shows the path after the gap.
   */
  fillMissing(): void {
    if (this.filling || this.closed || this.state.missingNodes.length === 0) return;
    this.filling = (async () => {
      let missing = this.state.missingNodes;
      while (missing.length > 0 && !this.closed) {
        const loaded = await this.deps.store.loadTree(systemScope(this.tenantId), this.id);
        if (!loaded) return;
        this.state.fill(loaded.nodes);
        const left = this.state.missingNodes;
        // Still missing after a read of the whole tree: not in the store (never expected); the view keeps its gap.
        if (left.length > 0 && left.every((id) => missing.includes(id))) return;
        missing = left;
      }
    })()
      .catch((err: unknown) =>
        this.deps.logger.warn('live session could not read the nodes its path moved onto', {
          err,
          sessionId: this.id,
        }),
      )
      .finally(() => {
        this.filling = null;
      });
  }

  private async filledSnapshotEvent(): Promise<SessionEvent> {
    if (this.filling) await this.filling;
    return this.snapshotEvent();
  }

  private receive(event: SessionEvent): void {
    if (this.closed) return;
    this.state.apply(event);
    if (event.type === 'tree') this.fillMissing();
    this.tracker.observe(event);
    for (const sub of this.subscribers.values()) {
      if (sub.buffer) sub.buffer.push(event);
      else this.deliver(sub, event);
    }
    if (event.type === 'status' || event.type === 'title') this.changed();
  }

  private deliver(sub: Subscriber, event: SessionEvent): void {
    if (event.type !== 'snapshot' && event.seq <= sub.lastSeq) return;
    sub.lastSeq = event.seq;
    try {
      sub.listener(event);
    } catch (err) {
      this.deps.logger.warn('session subscriber failed', { err, sessionId: this.id });
    }
  }

  private snapshotEvent(): SessionEvent {
    const snapshot = this.state.snapshot();
    return { seq: snapshot.seq, sessionId: this.id, type: 'snapshot', data: snapshot, at: Date.now() };
  }

  /** Something that decides liveness changed (subscribers, status): refresh presence, re-check idleness. */
  private changed(): void {
    this.hooks.onPresence(this);
    this.checkIdle();
  }

  /**
   * Idle shutdown is evaluated on transitions only (never by polling): becoming idle here (no controller, no run)
   * sets the session's idle timer; the timer checks the whole deployment when it fires.
   */
  checkIdle(): void {
    if (this.closed) return;
    const idle = this.isIdle;
    if (idle && !this.idleArmed) {
      this.hooks.onIdle(this, this.idleShutdownAfterMs ?? this.deps.settings.idleShutdownMs);
    }
    this.idleArmed = idle;
  }
}

function runIdOf(e: SessionEvent): string | null {
  if (!RUN_EVENT_TYPES.has(e.type)) return null;
  const data = e.data as { runId?: string | null };
  return data.runId ?? null;
}

function lastIndex<T>(items: T[], pred: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (pred(items[i]!)) return i;
  return -1;
}
