// The live sessions this process serves: opened on first use, shared by every
// subscriber and command here, reported to the live registry with their subscriber counts, announced on the
// activity feed when they open and close, and shut down when idle across the deployment (a durable timer set when
// a session becomes idle here; when it fires, the registry tells whether any instance still has a controller).

import type { IdleTimer } from '@canopy/queue';
import type { SessionRecord } from '@canopy/store';
import {
  LiveSession,
  type KnownState,
  type LiveSessionHost,
  type SessionEngineDeps,
  type SessionPublisher,
} from '@canopy/session';

export type CloseReason = 'close' | 'delete' | 'idle' | 'shutdown' | 'expired';

/**
 * How long a session opened here must stay idle before its first idle timer is set (for the same moment: idle
 * shutdown `afterMs` after it became idle). A subscriber attaching right after the open that made the session live
 * ends that idleness first, and the set (a durable BullMQ job: ~34 Redis commands) is not made for nothing. Later
 * idleness sets the timer at once (moving one: ~10 commands), so an earlier timer never fires in a short idle gap
 * between runs. A crash meanwhile loses nothing: the live session goes with the process.
 */
export const IDLE_ARM_DELAY_MS = 250;

export class LiveSessions implements LiveSessionHost {
  private readonly sessions = new Map<string, LiveSession>();
  private readonly opening = new Map<string, Promise<LiveSession | null>>();
  /** Runs executing in this process (filled by the run executor), for the registry's `worker`. */
  readonly localRuns = new Set<string>();

  constructor(
    private readonly deps: SessionEngineDeps,
    private readonly publisher: SessionPublisher,
  ) {}

  /** First idle timers waiting out IDLE_ARM_DELAY_MS before they are set, by session. */
  private readonly arming = new Map<string, NodeJS.Timeout>();
  /** Sessions whose idle timer this process has set since it opened them. */
  private readonly armed = new Set<string>();

  get(tenantId: string, id: string): LiveSession | undefined {
    return this.sessions.get(key(tenantId, id));
  }

  /**
   * The live session, opened if needed (concurrent opens share one; from `known` state when the caller has it:
   * see KnownState). Null for an unknown session.
   */
  async open(tenantId: string, id: string, known?: KnownState): Promise<LiveSession | null> {
    const k = key(tenantId, id);
    const existing = this.sessions.get(k);
    if (existing) return existing;
    let opening = this.opening.get(k);
    if (!opening) {
      opening = LiveSession.open(
        this.deps,
        tenantId,
        id,
        {
          onIdle: (s, afterMs) => this.armIdle(k, s, afterMs),
          // Not before it is registered here: its first presence is written (and awaited) below.
          onPresence: (s) => {
            if (this.sessions.get(k) === s) void this.presence(s);
          },
        },
        known,
      )
        .then(async (live) => {
          if (!live) return live;
          this.sessions.set(k, live);
          // Announced once for the deployment: by the instance whose presence made the session live.
          if (await this.presence(live)) {
            await this.publisher.activity({
              tenantId,
              type: 'opened',
              data: { id, title: live.info.title, status: live.status, userId: live.info.userId },
              at: Date.now(),
            });
          }
          return live;
        })
        .finally(() => this.opening.delete(k));
      this.opening.set(k, opening);
    }
    return opening;
  }

  /**
   * A run started or stopped executing in this process: the session's presence names this instance as its
   * `worker` while it runs (the `status` event that announced the run came before execution began).
   */
  runHere(tenantId: string, sessionId: string, runId: string, running: boolean): void {
    if (running) this.localRuns.add(runId);
    else this.localRuns.delete(runId);
    const live = this.get(tenantId, sessionId);
    if (live) void this.presence(live);
  }

  /**
   * A process that executes a run of a session it does not serve (a worker) announces itself as the session's
   * worker while the run lasts. Returns how to withdraw. Nothing to do where the session is live (its presence
   * names the worker already).
   */
  workerPresence(session: SessionRecord): () => Promise<void> {
    if (this.get(session.tenantId, session.id)) return () => Promise.resolve();
    const { registry, settings, logger } = this.deps;
    const instance = settings.instanceId;
    registry
      .upsert({
        tenantId: session.tenantId,
        id: session.id,
        title: session.title,
        status: 'busy',
        userId: session.userId,
        instance,
        controllers: 0,
        observers: 0,
        worker: instance,
        role: 'worker',
      })
      .catch((err: unknown) => logger.warn('live registry upsert failed', { err, sessionId: session.id }));
    return () =>
      registry
        .remove(session.tenantId, session.id, instance)
        .then(() => undefined)
        .catch((err: unknown) => logger.warn('live registry remove failed', { err, sessionId: session.id }));
  }

  /**
   * The session became idle here: its deployment-wide idle timer is set, due `afterMs` from now. The first time since
   * the open, IDLE_ARM_DELAY_MS later (or when the shutdown is due, if sooner) and only if the session is still idle.
   */
  private armIdle(k: string, s: LiveSession, afterMs: number): void {
    const set = (delayMs: number) => {
      this.armed.add(k);
      const timer: IdleTimer = { kind: 'session-idle', tenantId: s.tenantId, sessionId: s.id };
      this.deps.timers
        .set(timer, delayMs)
        .catch((err: unknown) => this.deps.logger.warn('idle timer not set', { err, sessionId: s.id }));
    };
    clearTimeout(this.arming.get(k));
    this.arming.delete(k);
    if (this.armed.has(k)) {
      set(afterMs);
      return;
    }
    const dueAt = Date.now() + afterMs;
    const handle = setTimeout(
      () => {
        this.arming.delete(k);
        if (s.isIdle) set(Math.max(0, dueAt - Date.now())); // else: subscribed, busy or closed meanwhile
      },
      Math.min(IDLE_ARM_DELAY_MS, afterMs),
    );
    handle.unref();
    this.arming.set(k, handle);
  }

  list(): LiveSession[] {
    return [...this.sessions.values()];
  }

  /** Stops serving a live session (stored data untouched). Idempotent: false when it was not live. */
  async close(tenantId: string, id: string, reason: CloseReason): Promise<boolean> {
    const k = key(tenantId, id);
    const live = this.sessions.get(k);
    if (!live) return false;
    this.sessions.delete(k);
    clearTimeout(this.arming.get(k));
    this.arming.delete(k);
    this.armed.delete(k);
    await live.close(reason);
    // Announced once for the deployment: by the instance whose presence was the last (when unsure, announced).
    let gone = true;
    try {
      ({ gone } = await this.deps.registry.remove(tenantId, id, this.deps.settings.instanceId));
    } catch (err) {
      this.deps.logger.warn('live registry remove failed', { err, sessionId: id });
    }
    // An expired session was announced by the retention sweep, live or not (once, whatever instances served it).
    if (gone && reason !== 'expired')
      await this.publisher.activity({ tenantId, type: 'closed', data: { id, reason }, at: Date.now() });
    return true;
  }

  /**
   * An idle timer fired: when no instance has a controller or a run for the session any more, every instance
   * stops serving it. Otherwise nothing (the instance that goes idle next sets the timer again).
   */
  async shutDownIfIdle(timer: IdleTimer): Promise<void> {
    const entry = await this.deps.registry.get(timer.tenantId, timer.sessionId);
    if (!entry || entry.controllers > 0 || entry.status !== 'idle') return;
    await this.deps.control.closeEverywhere(timer.tenantId, timer.sessionId, 'idle');
  }

  async closeAll(reason: CloseReason): Promise<void> {
    await Promise.all(this.list().map((s) => this.close(s.tenantId, s.id, reason)));
  }

  /**
   * Writes this instance's presence for the session; true when that made the session live in the deployment (or
   * when the registry could not say).
   */
  private async presence(s: LiveSession): Promise<boolean> {
    if (s.isClosed) return false;
    const runId = s.inFlight?.runId;
    return this.deps.registry
      .upsert({
        tenantId: s.tenantId,
        id: s.id,
        title: s.info.title,
        status: s.status,
        userId: s.info.userId,
        instance: this.deps.settings.instanceId,
        controllers: s.controllers,
        observers: s.observers,
        worker: runId && this.localRuns.has(runId) ? this.deps.settings.instanceId : null,
      })
      .then(({ created }) => created)
      .catch((err: unknown) => {
        this.deps.logger.warn('live registry upsert failed', { err, sessionId: s.id });
        return true;
      });
  }
}

function key(tenantId: string, id: string): string {
  return `${tenantId}\u0000${id}`;
}
