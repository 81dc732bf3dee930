// What the session engine is built from: ports only (store, bus, registry, feed, queue, model gateway) plus the
// code-registered tools and hooks. The embedded and distributed runtimes differ only in the adapters given here.

import type { HookRegistry, ModelGateway, RetryPolicy, ToolRegistry } from '@canopy/agent';
import type { CanopyConfig } from '@canopy/common';
import type { RunControl, Timers, TurnQueue } from '@canopy/queue';
import type { ActivityFeed, EventBus, LiveRegistry } from '@canopy/realtime';
import type { SessionStore } from '@canopy/store';
import type { ContextPolicy, Scope } from '@canopy/core';

export interface EngineSettings {
  /** This process's name in the live registry. */
  instanceId: string;
  /** Default idle shutdown of a live session without controllers (a session's own setting wins). */
  idleShutdownMs: number;
  /** How long a paused run waits for its decisions before the ones still awaited are rejected. */
  decisionTimeoutMs: number;
  /** Delta coalescing window before events reach the bus. */
  coalesceMs: number;
  toolTimeoutMs: number;
  /** The deployment's model windows (MODEL_LIMITS), before the built-in table; absent: the table alone. */
  modelLimits?: CanopyConfig['modelLimits'];
  /** Default and upper bound of a run's model calls. */
  maxSteps: number;
  retry: RetryPolicy;
  /** How long a stopping worker lets its runs finish before it hands them back (default 10 s). */
  shutdownGraceMs?: number;
  /** How long a finished run's result stays available to `waitForRun`. */
  resultTtlMs: number;
  /** The active path's last nodes a live session keeps in memory and in its snapshots (default 200). */
  livePathNodes?: number;
  /** Busy sessions a tenant may have (in the whole deployment) before new runs answer rate_limited. */
  maxBusyPerTenant?: number;
  /** How long a count of them lets later starts skip counting while far below it (BusyLimitGate; default 1 s). */
  busyCountMaxAgeMs?: number;
  /** How often the retention sweep runs where timers run (0 or absent: never). */
  retentionSweepMs?: number;
  /**
   * How often a process that executes runs looks for runs the queue lost (a Redis restarted empty) and queues
   * them again; also how long a run must stay lost before it is. Absent: never (the inline queue loses none).
   */
  lostRunSweepMs?: number;
  /**
   * Whether this process executes runs (takes them from the queue): the embedded api and workers do; the api of
   * a distributed deployment only enqueues.
   */
  executesRuns: boolean;
}

/**
 * What is admitted: a new run (a prompt, a branch, a queued prompt), or a turn of the run in flight (a steered
 * prompt, which starts no run).
 */
export type AdmissionKind = 'run' | 'turn';

/**
 * Whether a new run may start (quotas): throws a CanopyException (quota_exceeded) to refuse. Asked before a prompt
 * or a branch starts a run and before a prompt is steered onto a run in flight, never for a resume (a run in
 * flight is never cut).
 */
export interface RunAdmission {
  admit(scope: Scope, sessionId: string, kind?: AdmissionKind): Promise<void>;
}

export interface EngineLogger {
  info(message: string, context?: Record<string, unknown>): void;
  warn(message: string, context?: Record<string, unknown>): void;
  error(message: string, context?: Record<string, unknown>): void;
}

export interface SessionEngineDeps {
  store: SessionStore;
  bus: EventBus;
  registry: LiveRegistry;
  feed: ActivityFeed;
  queue: TurnQueue;
  /** Reaches the other processes: the executor of a run (cancel), every server of a session (close). */
  control: RunControl;
  /** Work due later that survives restarts: idle shutdown, decision expiry. */
  timers: Timers;
  gateway: ModelGateway;
  tools: ToolRegistry;
  hooks: HookRegistry;
  settings: EngineSettings;
  logger: EngineLogger;
  /** Quotas; none: every run is admitted. */
  admission?: RunAdmission;
  /** The providers each tenant brought its own key for (they make its models usable); none: no such keys. */
  providerKeys?: { providersOf(tenantId: string): Promise<ReadonlySet<string>> };
  /** The defaults each tenant set for its new sessions (GET / PUT /v1/settings); none: no defaults. */
  tenantDefaults?: {
    defaultsOf(tenantId: string): Promise<{ context: ContextPolicy | null; mcpServers: string[] | null }>;
  };
  /** Whether a tenant lets its end users' ids be on its runs' spans (PUT /v1/settings); none: it does not. */
  tenantTelemetry?: { userIdAllowed(tenantId: string): Promise<boolean> };
}

export const SESSION_ENGINE_DEPS = Symbol('SESSION_ENGINE_DEPS');
