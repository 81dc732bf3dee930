// Builds a real session engine for tests, assembled as the deployables assemble it (createSessionEngine, the
// processor registered): the Postgres store on a database of its own (machine's Postgres),
// in-process bus/registry/feed, the inline queue, the real model gateway (mock:echo / mock:script), and
// registries for tools and hooks. `restart()` builds a fresh engine over the same database, like a process
// restart. Nothing is mocked.

import { randomUUID } from 'node:crypto';
import { loadConfig } from '@canopy/common';
import { tenantScope, type Scope, type SessionEvent, type SessionEventType } from '@canopy/core';
import {
  DEFAULT_RETRY_POLICY,
  HookRegistry,
  ToolRegistry,
  TracedGateway,
  createModelGateway,
} from '@canopy/agent';
import { InlineTurnQueue, InProcessRunControl, InProcessTimers } from '@canopy/queue';
import { InProcessActivityFeed, InProcessEventBus, InProcessLiveRegistry } from '@canopy/realtime';
import { Database, PostgresSessionStore } from '@canopy/store';
import type { EngineSettings, RunDuties, SessionEngineDeps, SessionService } from '@canopy/session';
import { createSessionEngine, type LiveSessions, type SessionManager } from '@canopy/manager';
import { eventually } from './eventually';
import { createTestDatabase, type TestDatabase } from './test-postgres';

export interface Engine {
  /** Commands on one session. */
  service: SessionService;
  /** What the engine's process does for the runs it executes (execution, recovery, sweeps, stop). */
  duties: RunDuties;
  /** Sessions as a population (create, open, close, delete, list). */
  manager: SessionManager;
  /** The live sessions of this engine's process. */
  live: LiveSessions;
  deps: SessionEngineDeps;
  bus: InProcessEventBus;
  feed: InProcessActivityFeed;
  registry: InProcessLiveRegistry;
  tools: ToolRegistry;
  hooks: HookRegistry;
}

export class EngineHarness {
  private engines: Engine[] = [];
  db!: Database;
  private testDb!: TestDatabase;

  constructor(private readonly settings: Partial<EngineSettings> = {}) {}

  async setup(): Promise<Engine> {
    this.testDb = await createTestDatabase();
    this.db = new Database({
      url: this.testDb.url,
      poolMax: (this as { poolOverride?: number }).poolOverride ?? 8,
      txMaxWaitMs: 10_000,
      txTimeoutMs: 15_000,
    });
    return this.engine();
  }

  /** A new engine over the same database (tools and hooks carried over), as after a process restart. */
  engine(previous?: Engine): Engine {
    const bus = new InProcessEventBus({ replayLimit: 1_000 });
    const registry = new InProcessLiveRegistry();
    const feed = new InProcessActivityFeed();
    const tools = previous?.tools ?? new ToolRegistry();
    const hooks = previous?.hooks ?? new HookRegistry({ parallelTimeoutMs: 500, injectionBudgetTokens: 200 });
    const deps: SessionEngineDeps = {
      store: new PostgresSessionStore(this.db),
      bus,
      registry,
      feed,
      queue: new InlineTurnQueue((err) => {
        throw err;
      }),
      control: new InProcessRunControl(),
      timers: new InProcessTimers(),
      // Traced as the deployables' is (a no-op unless a test registers OpenTelemetry providers).
      gateway: new TracedGateway(createModelGateway(loadConfig({}))),
      tools,
      hooks,
      settings: {
        instanceId: `test-${this.engines.length}`,
        idleShutdownMs: 60_000,
        decisionTimeoutMs: 300_000,
        coalesceMs: 0,
        toolTimeoutMs: 2_000,
        maxSteps: 10,
        retry: { ...DEFAULT_RETRY_POLICY, baseDelayMs: 5, maxDelayMs: 20 },
        resultTtlMs: 60_000,
        executesRuns: true,
        ...this.settings,
      },
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
    };
    const { sessions, duties, manager, live, processor } = createSessionEngine(deps);
    processor.register();
    const engine = { service: sessions, duties, manager, live, deps, bus, feed, registry, tools, hooks };
    this.engines.push(engine);
    return engine;
  }

  async newTenant(): Promise<Scope> {
    const id = randomUUID();
    await this.db.withTenant({ tenantId: id }, (tx) =>
      tx.tenant.create({ data: { id, name: `t-${id.slice(0, 8)}` } }),
    );
    return tenantScope(id);
  }

  async teardown(): Promise<void> {
    for (const e of this.engines) await e.manager.shutdown().catch(() => undefined);
    await this.db?.disconnect();
    await this.testDb?.drop();
  }
}

/** Records a session's events from a subscription. */
export class EventLog {
  readonly events: SessionEvent[] = [];
  unsubscribe: () => void = () => undefined;

  static async of(engine: Engine, scope: Scope, sessionId: string, after?: number): Promise<EventLog> {
    const log = new EventLog();
    const sub = await engine.service.subscribe(scope, sessionId, (e) => log.events.push(e), { after });
    log.unsubscribe = () => sub.unsubscribe();
    return log;
  }

  types(from = 0): SessionEventType[] {
    return this.events.slice(from).map((e) => e.type);
  }

  /** Event types without streaming noise (deltas, block starts/ends). */
  milestones(from = 0): SessionEventType[] {
    return this.types(from).filter((t) => !/_(start|delta|end)$/.test(t));
  }

  of<T extends SessionEventType>(type: T): Array<Extract<SessionEvent, { type: T }>> {
    return this.events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);
  }

  async waitFor<T extends SessionEventType>(
    type: T,
    pred: (e: Extract<SessionEvent, { type: T }>) => boolean = () => true,
    timeoutMs = 5_000,
  ): Promise<Extract<SessionEvent, { type: T }>> {
    return eventually(
      () => {
        const found = this.of(type).find(pred);
        if (!found) throw new Error(`no ${type} event yet (have: ${this.types().join(', ')})`);
        return found;
      },
      { timeoutMs },
    );
  }
}

/** A prompt on the session, waited for to its end: the run's result. */
export async function converse(engine: Engine, scope: Scope, id: string, content: string) {
  const { runId } = await engine.service.prompt(scope, id, { content });
  return engine.service.waitForRun(scope, id, runId);
}
