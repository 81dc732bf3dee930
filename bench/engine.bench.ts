// Benchmark of the session engine on the machine's Postgres: closed-loop clients, one per session, each
// prompting mock:echo (zero delay) and waiting for the run's committed `store` event, at 1, 10 and 100
// concurrent sessions: runs/s and the prompt -> `store` latency (p50, p99). In the same run and on the same
// database, the raw Postgres limit for a transaction of a commit's shape (insert two node-like rows, update one
// session-like row) with as many concurrent clients, so the engine is reported as a share of what the database
// itself can do. The `cpu` columns (this process's CPU share) show whether the one JS thread is the bottleneck.
// The bench makes its own database from the migrated test template and drops it at the end.
// CANOPY_BENCH_ENGINE_POOL sets the engine's pool (default 20; 8, 20 and 40 gave the same figures at 100
// sessions on a 2-core machine, where the engine's thread is saturated). Options: --engine-levels=1,10,100
// --engine-measure-ms=6000 (the quick run: 100 sessions, 2.5 s windows).

import { randomUUID } from 'node:crypto';

import { Client, Pool } from 'pg';

import { DEFAULT_RETRY_POLICY, HookRegistry, ToolRegistry, createModelGateway } from '../libs/agent/src';
import { loadConfig } from '../libs/common/src';
import { tenantScope, type Scope, type SessionEvent } from '../libs/core/src';
import { InlineTurnQueue, InProcessRunControl, InProcessTimers } from '../libs/queue/src';
import { InProcessActivityFeed, InProcessEventBus, InProcessLiveRegistry } from '../libs/realtime/src';
import { createSessionEngine, type SessionEngine } from '../libs/manager/src';
import type { SessionEngineDeps, SessionService, Subscription } from '../libs/session/src';
import { Database, PostgresSessionStore } from '../libs/store/src';
import { TableMaintenance } from '../libs/store/src/table-maintenance';
import { createTestDatabase, prepareTemplate, roleUrl, type TestDatabase } from '../libs/testing/src';
import { MeasuredWindow } from './lib/load';
import { intListOption, intOption, type OptionSource } from './lib/options';
import { formatTime, judge, percent, printTable, type Verdict } from './lib/report';

/** The engine's database pool; CANOPY_BENCH_ENGINE_POOL overrides it to compare sizes. */
const ENGINE_POOL = positiveInt(process.env.CANOPY_BENCH_ENGINE_POOL) ?? 20;
/** Connections left free for everyone else when sizing the raw pool against max_connections. */
const CONNECTION_MARGIN = 10;
/** The requirement: the engine reaches at least this share of the raw limit at the highest concurrency. */
const TARGET_SHARE = 0.5;

export interface EngineOptions {
  levels: number[];
  warmupMs: number;
  measureMs: number;
}

export function engineOptions(from: OptionSource): EngineOptions {
  return {
    levels: intListOption(from, 'engine', 'levels', from.quick ? [100] : [1, 10, 100], [1, 1_000]),
    warmupMs: from.quick ? 500 : 1_000,
    measureMs: intOption(from, 'engine', 'measure-ms', from.quick ? 2_500 : 6_000, [1_000, 600_000]),
  };
}

export interface EngineLevel {
  concurrency: number;
  /** Runs per second of the measured window (each run counted by the share of it inside the window). */
  runsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Runs behind the latency figures (prompted and committed inside the window). */
  samples: number;
  /** This process's CPU time over the engine's window, in % of one core (all its threads). */
  cpuPct: number;
  /** The raw limit at the same concurrency: commit-shaped transactions per second. */
  rawTxPerSec: number;
  /** The raw pool's size (the concurrency, unless max_connections left fewer). */
  rawPool: number;
  rawP50Ms: number;
  /** This process's CPU time over the raw window, in % of one core. */
  rawCpuPct: number;
}

export interface EngineBenchResult {
  options: EngineOptions;
  enginePool: number;
  levels: EngineLevel[];
}

export async function runEngineBench(options: EngineOptions): Promise<EngineBenchResult> {
  await prepareTemplate();
  return withEngine(async (engine, db, testDb) => {
    const scope = await newTenant(db);
    const raw = await RawBench.create(testDb, Math.max(...options.levels));
    const levels: EngineLevel[] = [];
    for (const concurrency of options.levels) {
      const measured = await measureEngine(engine, scope, concurrency, options);
      const limit = await raw.measure(concurrency, options);
      levels.push({ concurrency, ...measured, ...limit });
    }
    return { options, enginePool: ENGINE_POOL, levels };
  });
}

/**
 * The engine alone at one concurrency, on a database of its own, playing the HTTP bench's load: each client creates
 * a session and plays `turnsPerSession` turns on it, then starts again with a new one (the HTTP bench compares
 * itself with it; the engine's own section plays one session per client for the whole window, whose history then
 * grows to hundreds of turns at one session and makes each run dearer than the HTTP load's).
 */
export async function measureEngineAt(
  concurrency: number,
  turnsPerSession: number,
  window: Pick<EngineOptions, 'warmupMs' | 'measureMs'>,
): Promise<Pick<EngineLevel, 'runsPerSec' | 'p50Ms' | 'p99Ms'>> {
  return withEngine(async (engine, db) => {
    const scope = await newTenant(db);
    return measureEngineSessions(engine, scope, concurrency, turnsPerSession, window);
  });
}

/**
 * An engine on a new database, kept as the service keeps its own: the table upkeep analyzes the tables as they grow
 * from empty (without it, plans made with no statistics walk the tenant's runs and nodes for the first minute, and
 * the engine the HTTP bench compares itself with would be slowed by what the service does not suffer).
 */
async function withEngine<T>(
  fn: (engine: SessionEngine, db: Database, testDb: TestDatabase) => Promise<T>,
): Promise<T> {
  const testDb = await createTestDatabase();
  const db = new Database({
    url: testDb.url,
    poolMax: ENGINE_POOL,
    txMaxWaitMs: 10_000,
    txTimeoutMs: 15_000,
  });
  const upkeep = new TableMaintenance(db, {
    vacuum: false,
    intervalMs: loadConfig({}).database.upkeepIntervalMs,
  });
  upkeep.start();
  const engine = startEngine(db);
  try {
    return await fn(engine, db, testDb);
  } finally {
    await engine.manager.shutdown().catch(() => undefined);
    await upkeep.stop();
    await db.disconnect().catch(() => undefined);
    await testDb.drop();
  }
}

/** Prints one row per concurrency and the verdict on the target at the highest. */
export function printEngineReport(title: string, result: EngineBenchResult): void {
  const header = [
    'sessions',
    'runs/s',
    'p50',
    'p99',
    'runs',
    'cpu',
    'raw tx/s',
    'raw pool',
    'raw p50',
    'raw cpu',
    'engine/raw',
  ];
  const rows = result.levels.map((l) => [
    String(l.concurrency),
    l.runsPerSec.toFixed(0),
    formatTime(l.p50Ms),
    formatTime(l.p99Ms),
    l.samples.toLocaleString('en-US'),
    `${l.cpuPct.toFixed(0)}%`,
    l.rawTxPerSec.toFixed(0),
    String(l.rawPool),
    formatTime(l.rawP50Ms),
    `${l.rawCpuPct.toFixed(0)}%`,
    `${((l.runsPerSec / l.rawTxPerSec) * 100).toFixed(1)}%`,
  ]);
  printTable(title, header, rows, new Set(header.keys()));
  console.log(
    `runs: mock:echo (no delay), one closed-loop client per session, latency from prompt() to the run's ` +
      `committed \`store\` event; ${result.options.warmupMs / 1000} s warm-up, ${result.options.measureMs / 1000} s ` +
      `measured; engine pool ${result.enginePool}.`,
  );
  console.log(
    'raw: BEGIN; INSERT two node-like rows (jsonb message); UPDATE one session-like row; COMMIT, with as many ' +
      'clients (node-postgres) on the same database.',
  );
  console.log(
    "cpu: this process's CPU time over the window in % of one core; the engine, its clients and the raw loop " +
      'each run on one JS thread, so ~100% means that thread is the bottleneck.',
  );
}

/** The target: the engine's runs/s at the highest concurrency as a share of the raw limit measured beside it. */
export function engineVerdicts(result: EngineBenchResult): Verdict[] {
  const top = result.levels.at(-1);
  if (!top) return [];
  return [
    judge(
      'engine',
      `runs/s >= ${percent(TARGET_SHARE)} of the raw Postgres limit at ${top.concurrency} sessions`,
      {
        value: top.runsPerSec / top.rawTxPerSec,
        limit: TARGET_SHARE,
        kind: 'min',
        format: percent,
        spread:
          `${top.runsPerSec.toFixed(0)} / ${top.rawTxPerSec.toFixed(0)} tx/s; ` +
          `p50/p99 ${formatTime(top.p50Ms)}/${formatTime(top.p99Ms)} (raw p50 ${formatTime(top.rawP50Ms)})`,
      },
    ),
  ];
}

// The engine

/** The engine assembled and its processor registered, as the test harness does. */
function startEngine(db: Database): SessionEngine {
  const engine = createSessionEngine(engineDeps(db));
  engine.processor.register();
  return engine;
}

/** The engine as the test harness assembles it (in-process bus, registry, feed; inline queue), coalescing off. */
function engineDeps(db: Database): SessionEngineDeps {
  return {
    store: new PostgresSessionStore(db),
    bus: new InProcessEventBus({ replayLimit: 1_000 }),
    registry: new InProcessLiveRegistry(),
    feed: new InProcessActivityFeed(),
    queue: new InlineTurnQueue((err) => {
      throw err;
    }),
    control: new InProcessRunControl(),
    timers: new InProcessTimers(),
    gateway: createModelGateway(loadConfig({})),
    tools: new ToolRegistry(),
    hooks: new HookRegistry({ parallelTimeoutMs: 500, injectionBudgetTokens: 200 }),
    settings: {
      instanceId: 'bench',
      executesRuns: true,
      idleShutdownMs: 60_000,
      decisionTimeoutMs: 300_000,
      coalesceMs: 0,
      toolTimeoutMs: 2_000,
      maxSteps: 10,
      retry: { ...DEFAULT_RETRY_POLICY, baseDelayMs: 5, maxDelayMs: 20 },
      resultTtlMs: 60_000,
    },
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
  };
}

async function newTenant(db: Database): Promise<Scope> {
  const id = randomUUID();
  await db.withTenant({ tenantId: id }, (tx) =>
    tx.tenant.create({ data: { id, name: `bench-${id.slice(0, 8)}` } }),
  );
  return tenantScope(id);
}

/**
 * Fresh sessions (so every level starts from empty trees), one client each, all looping until the window ends.
 * Every session's first run, which also titles it, is done before the clock starts: at 100 sessions a 1 s
 * warm-up alone would leave most of them in the window.
 */
async function measureEngine(
  engine: SessionEngine,
  scope: Scope,
  concurrency: number,
  options: Pick<EngineOptions, 'warmupMs' | 'measureMs'>,
): Promise<Pick<EngineLevel, 'runsPerSec' | 'p50Ms' | 'p99Ms' | 'samples' | 'cpuPct'>> {
  const clients = await Promise.all(
    Array.from({ length: concurrency }, async () => {
      const session = await engine.manager.create(scope, { model: 'mock:echo', opts: {} });
      return SessionClient.start(engine.sessions, scope, session.id);
    }),
  );
  try {
    await Promise.all(clients.map((client) => client.run('the first prompt, which titles the session')));
    const window = new MeasuredWindow(options.warmupMs, options.measureMs);
    await Promise.all(
      clients.map(async (client) => {
        for (let i = 0; window.open; i++) await window.time(() => client.run(`prompt ${i} from the bench`));
      }),
    );
    const { perSec, latency, cpuPct } = window.figures();
    return { runsPerSec: perSec, p50Ms: latency.p50, p99Ms: latency.p99, samples: latency.count, cpuPct };
  } finally {
    for (const client of clients) client.stop();
    await Promise.all(clients.map((c) => engine.manager.close(scope, c.sessionId).catch(() => undefined)));
  }
}

/**
 * Clients that each create a session, play `turns` runs on it (the first titles it, as over HTTP) and start again
 * with a new one until the window ends; creates are not timed but take the clients' time, as the HTTP load's do.
 */
async function measureEngineSessions(
  engine: SessionEngine,
  scope: Scope,
  concurrency: number,
  turns: number,
  options: Pick<EngineOptions, 'warmupMs' | 'measureMs'>,
): Promise<Pick<EngineLevel, 'runsPerSec' | 'p50Ms' | 'p99Ms'>> {
  const window = new MeasuredWindow(options.warmupMs, options.measureMs);
  const sessionIds: string[] = [];
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async (_, index) => {
        while (window.open) {
          const session = await engine.manager.create(scope, { model: 'mock:echo', opts: {} });
          sessionIds.push(session.id);
          const client = await SessionClient.start(engine.sessions, scope, session.id);
          try {
            for (let t = 0; t < turns && window.open; t++)
              await window.time(() => client.run(`u${index} t${t}`));
          } finally {
            client.stop();
          }
        }
      }),
    );
  } finally {
    await Promise.all(sessionIds.map((id) => engine.manager.close(scope, id).catch(() => undefined)));
  }
  const { perSec, latency } = window.figures();
  return { runsPerSec: perSec, p50Ms: latency.p50, p99Ms: latency.p99 };
}

/**
 * One session's client: a subscription that resolves each run on its committed `store` event. A commit
 * publishes `turn` (with the run id, stop 'stop' ending the run), `tree`, then `store`, so the `store` kind
 * 'tree' after a run's final `turn` is that run's. Ends that arrive before prompt() answers are kept by run id.
 */
class SessionClient {
  private finalTurn: string | null = null;
  private readonly ended = new Map<string, number | Error>();
  private waiter: { runId: string; resolve: (at: number) => void; reject: (err: Error) => void } | null =
    null;
  private subscription: Subscription | null = null;

  private constructor(
    private readonly service: SessionService,
    private readonly scope: Scope,
    readonly sessionId: string,
  ) {}

  static async start(service: SessionService, scope: Scope, sessionId: string): Promise<SessionClient> {
    const client = new SessionClient(service, scope, sessionId);
    client.subscription = await service.subscribe(scope, sessionId, (e) => client.onEvent(e));
    return client;
  }

  /** Prompts and resolves with the time (performance.now) the run's `store` event arrived. */
  async run(content: string): Promise<number> {
    const { runId } = await this.service.prompt(this.scope, this.sessionId, { content });
    const early = this.ended.get(runId);
    if (early !== undefined) {
      this.ended.delete(runId);
      if (early instanceof Error) throw early;
      return early;
    }
    return new Promise((resolve, reject) => (this.waiter = { runId, resolve, reject }));
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }

  private onEvent(e: SessionEvent): void {
    if (e.type === 'turn' && e.data.stop === 'stop') {
      this.finalTurn = e.data.runId;
    } else if (e.type === 'store' && e.data.kind === 'tree' && this.finalTurn) {
      const runId = this.finalTurn;
      this.finalTurn = null;
      this.settle(runId, e.data.ok ? performance.now() : new Error(`run ${runId}: ${e.data.error}`));
    } else if (e.type === 'error' && e.data.runId) {
      this.settle(e.data.runId, new Error(`run ${e.data.runId} failed: ${e.data.code}: ${e.data.message}`));
    } else if (e.type === 'cancelled') {
      this.settle(e.data.runId, new Error(`run ${e.data.runId} was cancelled`));
    }
  }

  private settle(runId: string, end: number | Error): void {
    const waiter = this.waiter;
    if (waiter?.runId !== runId) {
      this.ended.set(runId, end);
      return;
    }
    this.waiter = null;
    if (end instanceof Error) waiter.reject(end);
    else waiter.resolve(end);
  }
}

// The raw limit

/**
 * Commit-shaped transactions on scratch tables in the bench database, as the same role the engine uses: per
 * client one session-like row, and per transaction two node-like rows inserted and that row updated.
 */
class RawBench {
  private nextNodeId = 1;

  private constructor(private readonly url: string) {}

  static async create(testDb: TestDatabase, sessions: number): Promise<RawBench> {
    const url = roleUrl(testDb.name);
    await withClient(url, (client) =>
      client.query(`
        CREATE TABLE bench_sessions (
          id int PRIMARY KEY,
          head int,
          next_node_id int NOT NULL DEFAULT 1,
          usage jsonb NOT NULL DEFAULT '{}',
          updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE bench_nodes (
          session_id int NOT NULL,
          id int NOT NULL,
          parent_id int,
          role text NOT NULL,
          message jsonb NOT NULL,
          usage jsonb,
          created_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (session_id, id)
        );
        INSERT INTO bench_sessions (id) SELECT generate_series(1, ${sessions});`),
    );
    return new RawBench(url);
  }

  async measure(
    concurrency: number,
    options: Pick<EngineOptions, 'warmupMs' | 'measureMs'>,
  ): Promise<Pick<EngineLevel, 'rawTxPerSec' | 'rawPool' | 'rawP50Ms' | 'rawCpuPct'>> {
    const size = Math.min(concurrency, await this.freeConnections());
    const pool = new Pool({ connectionString: this.url, max: size });
    // An idle client may still be closing when the database is dropped: that error is no failure of the bench.
    pool.on('error', () => undefined);
    try {
      await openAll(pool, size);
      const window = new MeasuredWindow(options.warmupMs, options.measureMs);
      await Promise.all(
        Array.from({ length: concurrency }, async (_, client) => {
          const sessionId = client + 1;
          while (window.open) {
            const id = this.nextNodeId;
            this.nextNodeId += 2;
            await window.time(() => commitShaped(pool, sessionId, id));
          }
        }),
      );
      const { perSec, latency, cpuPct } = window.figures();
      return { rawTxPerSec: perSec, rawPool: size, rawP50Ms: latency.p50, rawCpuPct: cpuPct };
    } finally {
      await pool.end();
    }
  }

  /**
   * Connections a new pool may open now: max_connections less the superuser-reserved ones, those open (the
   * engine's pool included) and a margin for everyone else. max_connections is often 100, so at 100 clients the
   * raw pool is smaller than the concurrency; past the machine's core count that costs the raw figure nothing.
   */
  private async freeConnections(): Promise<number> {
    const { rows } = await withClient(this.url, (client) =>
      client.query<{ free: number }>(`
        SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int
               - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int AS free`),
    );
    return Math.max(1, (rows[0]?.free ?? 0) - CONNECTION_MARGIN);
  }
}

/** Opens the pool's connections before the clock starts; none stays checked out, even when one fails. */
async function openAll(pool: Pool, size: number): Promise<void> {
  const opened = await Promise.allSettled(Array.from({ length: size }, () => pool.connect()));
  for (const o of opened) if (o.status === 'fulfilled') o.value.release();
  const failed = opened.find((o) => o.status === 'rejected');
  if (failed) throw failed.reason;
}

async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** One transaction of a commit's shape: the prompt and its answer as nodes, then the session row. */
async function commitShaped(pool: Pool, sessionId: number, id: number): Promise<void> {
  const at = Date.now();
  const prompt = {
    role: 'user',
    content: [{ type: 'text', text: `prompt ${id} from the bench` }],
    timestamp: at,
  };
  const answer = {
    role: 'assistant',
    content: [{ type: 'text', text: `Echo: prompt ${id} from the bench` }],
    timestamp: at,
  };
  const usage = { inputTokens: 4, outputTokens: 5, inputCost: 0, outputCost: 0 };
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO bench_nodes (session_id, id, parent_id, role, message, usage)
       VALUES ($1, $2, $3, 'user', $4::jsonb, NULL), ($1, $5, $2, 'assistant', $6::jsonb, $7::jsonb)`,
      [
        sessionId,
        id,
        id > 1 ? id - 1 : null,
        JSON.stringify(prompt),
        id + 1,
        JSON.stringify(answer),
        JSON.stringify(usage),
      ],
    );
    await client.query(
      `UPDATE bench_sessions SET head = $2, next_node_id = $3, usage = $4::jsonb, updated_at = now() WHERE id = $1`,
      [sessionId, id + 1, id + 2, JSON.stringify(usage)],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

// Helpers

function positiveInt(value: string | undefined): number | undefined {
  const n = value === undefined ? Number.NaN : Number(value);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}
