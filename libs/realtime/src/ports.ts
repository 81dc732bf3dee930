// The transport ports under the session and manager layers, and the credential notices the api's connections
// listen to. The embedded runtime uses the in-process adapters of this library; the distributed runtime plugs
// Redis adapters into the same ports, and one contract test suite (./testing) runs against both.

import type { ActivityEvent, LiveEntry, SessionEvent, SessionEventInput, SessionStatus } from '@canopy/core';

export type { LiveEntry };

export type Unsubscribe = () => Promise<void>;

export interface ReplayResult {
  /** Events with seq > after that the log still holds, in order. */
  events: SessionEvent[];
  /** False when the log no longer reaches back to after + 1 (the caller must start from a snapshot). */
  complete: boolean;
  /** The session's last assigned seq (0 when it has none). */
  lastSeq: number;
}

/**
 * Per-session ordered events. `publish` numbers events with consecutive seqs, strictly increasing per session
 * (also across restarts of the bus: a fresh sequence starts above any earlier one), appends them to the
 * session's bounded replay log and delivers them to the session's subscribers, in order, as one atomic step:
 * order, replay and delivery always agree.
 */
export interface EventBus {
  publish(tenantId: string, sessionId: string, events: SessionEventInput[]): Promise<SessionEvent[]>;
  /** Delivers every event published after this call resolves, in seq order, exactly once. */
  subscribe(
    tenantId: string,
    sessionId: string,
    listener: (event: SessionEvent) => void,
  ): Promise<Unsubscribe>;
  replay(tenantId: string, sessionId: string, after: number): Promise<ReplayResult>;
  lastSeq(tenantId: string, sessionId: string): Promise<number>;
  /**
   * The session's last seq; for a session that has none yet, first fixes where its sequence starts (as its
   * first publish would) and answers the seq just before it. A snapshot taken at that seq is then resumable: a
   * replay after it holds every event from the first. Idempotent.
   */
  anchor(tenantId: string, sessionId: string): Promise<number>;
  /** Drops a session's log (the session was deleted). Its sequence still never goes back. */
  forget(tenantId: string, sessionId: string): Promise<void>;
  close(): Promise<void>;
}

/** One instance's view of a live session it serves. */
export interface LivePresence {
  tenantId: string;
  id: string;
  title: string | null;
  status: SessionStatus;
  userId: string | null;
  /** The instance (api process) that holds the live session. */
  instance: string;
  controllers: number;
  observers: number;
  /** The instance running the session's current run, if any. */
  worker: string | null;
  /**
   * `worker`: a process that only executes the session's run (it serves no subscriber): it names the worker but is
   * not one of the apis serving the session. Default `api`.
   */
  role?: 'api' | 'worker';
}

/** Which sessions are live, where, with how many subscribers. */
export interface LiveRegistry {
  /**
   * Adds or replaces this instance's presence for the session (keeps `since` of an existing entry). `created`:
   * no instance had a presence before, the session just became live in the deployment.
   */
  upsert(presence: LivePresence): Promise<{ created: boolean }>;
  /**
   * Removes this instance's presence; the entry disappears when no instance serves the session (`gone`: this was
   * the last presence, the session is no longer live in the deployment).
   */
  remove(tenantId: string, id: string, instance: string): Promise<{ gone: boolean }>;
  get(tenantId: string, id: string): Promise<LiveEntry | null>;
  /** Live sessions of a tenant, or of every tenant (null), newest first. */
  list(tenantId: string | null): Promise<LiveEntry[]>;
  close(): Promise<void>;
}

/** The per-tenant activity channel dashboards watch (and an all-tenants view for the admin). */
export interface ActivityFeed {
  publish(event: ActivityEvent): Promise<void>;
  /** tenantId null: every tenant's activity. */
  subscribe(tenantId: string | null, listener: (event: ActivityEvent) => void): Promise<Unsubscribe>;
  close(): Promise<void>;
}

/**
 * A change to credentials that every process of the deployment must act on at once: a key revoked (the connections
 * it opened end, and those of the user tokens it minted), a tenant disabled (every connection of it ends) or enabled
 * again. Each process also forgets what it cached about the key or tenant.
 */
export type CredentialNotice =
  | { type: 'key_revoked'; tenantId: string; keyId: string }
  | { type: 'tenant_disabled'; tenantId: string }
  | { type: 'tenant_enabled'; tenantId: string };

/** Credential notices, heard by every process of the deployment (the publisher's own included). */
export interface CredentialNotices {
  publish(notice: CredentialNotice): Promise<void>;
  /**
   * Delivers every notice published after this call resolves, in publish order. `onMissed` runs when notices may
   * have been lost (the adapter's connection was away): the subscriber then checks what it holds again.
   */
  subscribe(listener: (notice: CredentialNotice) => void, onMissed?: () => void): Promise<Unsubscribe>;
  close(): Promise<void>;
}

export const EVENT_BUS = Symbol('EVENT_BUS');
export const LIVE_REGISTRY = Symbol('LIVE_REGISTRY');
export const ACTIVITY_FEED = Symbol('ACTIVITY_FEED');
export const CREDENTIAL_NOTICES = Symbol('CREDENTIAL_NOTICES');
