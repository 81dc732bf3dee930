// Benchmark of the public API as deployed: the built api process (the embedded default with PGlite, and the
// machine's Postgres as the non-superuser test role, both with the in-process runtime), driven over HTTP by a
// load generator in a process of its own (bench/http-load.mjs: keep-alive, closed loop, one virtual user per
// session, 10 turns per session). Modes: wait (prompt with wait: true), stream (SSE + prompt until the run's
// `store`), branch (regenerate with wait), create (sessions only); at 1, 10 and 100 concurrent sessions.
// Per level: runs/s, p50/p99, session create p50, CPU of the api, of the database backends and of the load
// generator over the load, the api's peak resident memory, and per run the database work: transactions and rows
// fetched (pg_stat_database), statements (the api's own count of round trips, /metrics). In the same run, the
// in-process engine (bench/engine.bench.ts) at the same concurrency on the same Postgres, so HTTP is judged as a
// share of it; and a history section that seeds 100,000 earlier runs in 10,000 sessions of the tenant (and as
// many in another tenant) and measures again. Each target is printed with its verdict. The service and the engine
// are warmed (SERVICE_WARMUP_MS of unmeasured turns) before their first level: the figures are a running service's.
// Options: --http-modes=wait,stream --http-levels=1,100 --http-runtimes=postgres --http-measure-ms=6000
// --http-history=false (skip the seeded-history section) --http-profile=DIR (run the api with --cpu-prof into DIR
// and print where its CPU went over the service's life after its warm-up: profile one level, e.g. --http-levels=100)
// (or CANOPY_BENCH_HTTP_* variables of the same names).

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { Client } from 'pg';

import {
  TEST_ADMIN_KEY,
  TEST_JWT_SECRET,
  adminUrl,
  createTestDatabase,
  eventually,
  freePort,
  prepareTemplate,
  type TestDatabase,
} from '../libs/testing/src';
import { serviceProcess } from '../scripts/lib/service-process.mjs';
import { summariseCpuProfile, type Layer, type ProfileSummary } from './cpu-profile';
import { measureEngineAt } from './engine.bench';
import { benchOption } from './options';
import { formatTime, printTable } from './report';

/** The target: rows fetched (pg_stat_database.tup_fetched) per run. */
const ROWS_PER_RUN_TARGET = 50;

const ROOT = resolve(__dirname, '..');
const API_MAIN = join(ROOT, 'dist/apps/api/apps/api/src/main.js');
const LOADGEN = join(ROOT, 'bench/http-load.mjs');
const TURNS_PER_SESSION = 10;
const WARMUP_MS = 1_500;
/**
 * Before its first level, each service (and the in-process engine, once) plays this long at WARM_CONCURRENCY,
 * unmeasured: a process's first thousands of requests run while V8 still compiles its hot functions (one pair of
 * runs: wait p50 at one session 7.2 ms measured right after boot, 5.9 ms after another level), and a fresh database
 * plans on tables not yet analyzed (133 rows read per run against 27). The levels then measure a running service.
 */
const SERVICE_WARMUP_MS = 8_000;
const WARM_CONCURRENCY = 10;
/**
 * The quiet moment before each level that measures the idle service's own transactions (its timers: the webhook
 * outbox's poll twice a second, the table upkeep's counter reads). Its count is whole transactions, so the rate it
 * gives is known to one transaction in IDLE_MS: scaled over a level's ~19 s window, to ±4 transactions at 5 s.
 */
const IDLE_MS = 5_000;
/**
 * How long after a load the database's counters are read. A backend reports its statistics (pg_stat_database,
 * pg_stat_user_tables) at most once a second; what it did within a second of its last report waits until it goes
 * idle and then up to PGSTAT_IDLE_INTERVAL (10 s in Postgres 15-17) more. Read sooner, up to a second of each
 * pooled connection's transactions would be missing from the level and counted in the next (as "idle").
 */
const STATS_SETTLE_MS = 11_000;
const CLK_TCK = 100;

type Mode = 'wait' | 'stream' | 'branch' | 'create';
type RuntimeName = 'postgres' | 'embedded';

export interface HttpBenchOptions {
  modes: Mode[];
  levels: number[];
  runtimes: RuntimeName[];
  measureMs: number;
  history: boolean;
  /** A directory for the api's CPU profiles (node --cpu-prof), or none. */
  profileDir: string | null;
  /** DATABASE_POOL_MAX of the api under load (--http-pool=N); unset: the service's default. */
  poolMax: number | null;
}

export interface HttpLevel {
  runtime: RuntimeName;
  mode: Mode;
  concurrency: number;
  /** Turns (runs) per second in the measured window; sessions per second in `create` mode. */
  perSec: number;
  p50Ms: number | null;
  p99Ms: number | null;
  createP50Ms: number | null;
  /** CPU over the whole load in % of one core. */
  apiCpuPct: number;
  dbCpuPct: number | null;
  loadCpuPct: number;
  apiRssMiB: number;
  /** Database work per run (per session in `create` mode); null where the database is not reachable. */
  xactsPerRun: number | null;
  xactsPerRunLessCreates: number | null;
  /**
   * xactsPerRunLessCreates less what the service does with no load (timers: the webhook outbox poll, sweeps),
   * measured on the same service for a few seconds right before the load, at its rate over the load's window, and
   * less the table upkeep's ANALYZEs and VACUUMs (one transaction each; a few a minute however many runs:
   * upkeepAnalyzes, upkeepVacuums) and the setup of connections opened meanwhile (connectionsOpened).
   */
  xactsPerRunLessIdle: number | null;
  /** ANALYZEs the table upkeep ran during the load (pg_stat_all_tables.analyze_count + autoanalyze_count). */
  upkeepAnalyzes: number | null;
  /**
   * VACUUMs the table upkeep ran during the load (pg_stat_all_tables.vacuum_count + autovacuum_count: the catalogs,
   * pg_statistic that the ANALYZEs rewrite among them, and TOAST tables, each vacuumed in a transaction of its own).
   */
  upkeepVacuums: number | null;
  /**
   * Connections the pool opened to the database during the load (pg_stat_database.sessions): each is two
   * transactions (Postgres counts the backend's start as one, then the pool's SET extra_float_digits); not per run,
   * so not in xactsPerRunLessIdle.
   */
  connectionsOpened: number | null;
  /** Transactions per second of the idle service, measured right before the load. */
  idleXactsPerSec: number | null;
  /** The transactions of the load's window and what the verdict leaves out of them, in absolute numbers. */
  xactAccount: {
    total: number;
    runs: number;
    sessions: number;
    idle: number;
    /** One transaction of the idle count, scaled over the window: what the idle rate cannot resolve. */
    idleResolution: number;
    upkeep: number;
    connectionSetup: number;
  } | null;
  rowsFetchedPerRun: number | null;
  /**
   * WAL flushes (pg_stat_wal.wal_sync, the whole Postgres server's: idle but for the bench) per run; a commit waits
   * for its flush, so at one session this is what a run waits on the disk for.
   */
  walSyncsPerRun: number | null;
  statementsPerRun: number;
  /** Time the api's statements waited for a pooled connection (DATABASE_POOL_MAX), per run, in ms. */
  poolWaitMsPerRun: number;
  /** Where the rows were read, per table (Postgres only): scans and rows per run. */
  tables: Array<{ table: string; idxScans: number; idxRows: number; seqScans: number; seqRows: number }>;
  errors: Record<string, number>;
}

export interface HttpBenchResult {
  levels: HttpLevel[];
  /**
   * The in-process engine at each level, measured right before the Postgres runtime's HTTP levels, and at the top
   * level once more right after them: the engine alone swings by a third from run to run on a shared machine, so
   * HTTP is judged against the mean of the two measurements next to it in time, with the range printed.
   */
  engine: Array<{
    concurrency: number;
    when: 'before' | 'after';
    runsPerSec: number;
    p50Ms: number;
    p99Ms: number;
  }>;
  history: { empty: HttpLevel; seeded: HttpLevel; seededRuns: number; seededSessions: number } | null;
  measureMs: number;
  /** The api's CPU profile per runtime, when --http-profile was given. */
  profiles: Array<{ runtime: RuntimeName; path: string; summary: ProfileSummary | null }>;
}

export function httpBenchOptions(argv: readonly string[], env: NodeJS.ProcessEnv): HttpBenchOptions {
  const opt = (name: string) => benchOption(argv, env, 'http', name);
  const list = <T extends string>(name: string, allowed: readonly T[], all: readonly T[]): T[] => {
    const text = opt(name);
    if (!text) return [...all];
    const items = text.split(',').map((s) => s.trim()) as T[];
    const bad = items.filter((i) => !allowed.includes(i));
    if (bad.length)
      throw new Error(`--http-${name}: unknown ${bad.join(', ')} (known: ${allowed.join(', ')})`);
    return items;
  };
  const modes = list<Mode>(
    'modes',
    ['wait', 'stream', 'branch', 'create'],
    ['wait', 'stream', 'branch', 'create'],
  );
  const runtimes = list<RuntimeName>('runtimes', ['postgres', 'embedded'], ['postgres', 'embedded']);
  const levelsText = opt('levels');
  const levels = levelsText ? levelsText.split(',').map(Number) : [1, 10, 100];
  if (levels.some((n) => !Number.isInteger(n) || n < 1 || n > 1_000)) {
    throw new Error(`--http-levels: integers from 1 to 1000, got "${levelsText}"`);
  }
  const measureMs = Number(opt('measure-ms') ?? 6_000);
  if (!Number.isInteger(measureMs) || measureMs < 1_000) throw new Error('--http-measure-ms: at least 1000');
  const profile = opt('profile');
  const pool = opt('pool');
  const poolMax = pool === undefined ? null : Number(pool);
  if (poolMax !== null && (!Number.isInteger(poolMax) || poolMax < 1 || poolMax > 200)) {
    throw new Error(`--http-pool: an integer from 1 to 200, got "${pool}"`);
  }
  return {
    modes,
    levels,
    runtimes,
    measureMs,
    history: opt('history') !== 'false',
    profileDir: profile ? resolve(profile) : null,
    poolMax,
  };
}

export async function runHttpBench(options: HttpBenchOptions): Promise<HttpBenchResult> {
  await prepareTemplate();
  const levels: HttpLevel[] = [];
  let history: HttpBenchResult['history'] = null;
  const profiles: HttpBenchResult['profiles'] = [];
  const engine: HttpBenchResult['engine'] = [];
  const compareEngine = options.runtimes.includes('postgres') && options.modes.includes('wait');
  for (const runtime of options.runtimes) {
    if (runtime === 'postgres' && compareEngine) {
      // The engine runs in this process: warmed once, as the service is, before its first measured level.
      await measureEngineAt(WARM_CONCURRENCY, TURNS_PER_SESSION);
      for (const concurrency of options.levels) {
        engine.push({
          concurrency,
          when: 'before',
          ...(await measureEngineAt(concurrency, TURNS_PER_SESSION)),
        });
      }
    }
    const profileDir = options.profileDir ? join(options.profileDir, runtime) : null;
    if (profileDir) {
      rmSync(profileDir, { recursive: true, force: true });
      mkdirSync(profileDir, { recursive: true });
    }
    const service = await Service.start(runtime, profileDir, options.poolMax);
    try {
      await service.warm();
      for (const mode of options.modes) {
        for (const concurrency of options.levels) {
          levels.push(await service.measure(mode, concurrency, options.measureMs));
        }
      }
      if (runtime === 'postgres' && compareEngine) {
        // Right after the HTTP levels (the service idles meanwhile: its timers, ~1 transaction a second).
        const top = Math.max(...options.levels);
        engine.push({ concurrency: top, when: 'after', ...(await measureEngineAt(top, TURNS_PER_SESSION)) });
      }
      if (runtime === 'postgres' && options.history) {
        const top = Math.max(...options.levels);
        const empty = await service.measureFresh('wait', top, options.measureMs);
        const seeded = await service.seedHistory(100_000, 10_000);
        history = {
          empty,
          seeded: await service.measure('wait', top, options.measureMs),
          seededRuns: seeded.runs,
          seededSessions: seeded.sessions,
        };
      }
    } finally {
      await service.stop();
    }
    if (profileDir) {
      const summary = newestProfile(profileDir, service.readyAfterMs);
      profiles.push({ runtime, path: profileDir, summary });
    }
  }
  return { levels, engine, history, measureMs: options.measureMs, profiles };
}

export function printHttpReport(title: string, result: HttpBenchResult): void {
  const header = [
    'runtime',
    'mode',
    'sessions',
    'runs/s',
    'p50',
    'p99',
    'create p50',
    'api cpu',
    'db cpu',
    'load cpu',
    'api rss',
    'tx/run',
    'rows/run',
    'wal syncs/run',
    'stmts/run',
    'pool wait/run',
    'errors',
  ];
  const num = (v: number | null, digits = 1) => (v === null ? '-' : v.toFixed(digits));
  const time = (v: number | null) => (v === null ? '-' : formatTime(v));
  const row = (l: HttpLevel) => [
    l.runtime,
    l.mode,
    String(l.concurrency),
    l.perSec.toFixed(0),
    time(l.p50Ms),
    time(l.p99Ms),
    time(l.createP50Ms),
    `${l.apiCpuPct.toFixed(0)}%`,
    l.dbCpuPct === null ? '-' : `${l.dbCpuPct.toFixed(0)}%`,
    `${l.loadCpuPct.toFixed(0)}%`,
    `${l.apiRssMiB.toFixed(0)} MiB`,
    num(l.xactsPerRun, 2),
    num(l.rowsFetchedPerRun, 0),
    num(l.walSyncsPerRun, 2),
    l.statementsPerRun.toFixed(1),
    formatTime(l.poolWaitMsPerRun),
    Object.entries(l.errors)
      .map(([k, v]) => `${k}:${v}`)
      .join(' ') || '0',
  ];
  printTable(
    title,
    header,
    result.levels.map(row),
    new Set([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
  );
  console.log(
    `Each virtual user creates a session and plays ${TURNS_PER_SESSION} mock:echo turns on it, then starts again; ` +
      `each service first warmed by ${SERVICE_WARMUP_MS / 1000} s of unmeasured turns at ${WARM_CONCURRENCY} sessions (the engine ` +
      `likewise); per level ${WARMUP_MS / 1000} s warm-up, ${result.measureMs / 1000} s measured. per run: database work over the whole ` +
      'load divided by the runs (sessions in create mode); tx/run counts session creates too; wal syncs/run: the ' +
      "server's WAL flushes (each commit waits for one; concurrent commits share them).",
  );
  if (result.engine.length) {
    printTable(
      `In-process engine at the same concurrency and load (${TURNS_PER_SESSION} turns a session; same Postgres; before and after the HTTP levels)`,
      ['sessions', 'measured', 'runs/s', 'p50', 'p99', 'HTTP wait / engine'],
      result.engine.map((e) => {
        const http = result.levels.find(
          (l) => l.runtime === 'postgres' && l.mode === 'wait' && l.concurrency === e.concurrency,
        );
        return [
          String(e.concurrency),
          e.when,
          e.runsPerSec.toFixed(0),
          formatTime(e.p50Ms),
          formatTime(e.p99Ms),
          http ? `${((http.perSec / e.runsPerSec) * 100).toFixed(0)}%` : '-',
        ];
      }),
      new Set([0, 2, 3, 4, 5]),
    );
  }
  if (result.history) {
    const { empty, seeded } = result.history;
    printTable(
      `History: ${result.history.seededRuns.toLocaleString('en-US')} earlier runs in ${result.history.seededSessions.toLocaleString('en-US')} sessions per tenant, 2 tenants`,
      header,
      [row(empty), row(seeded)],
      new Set([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]),
    );
  }
  const waits = result.levels
    .filter((l) => l.runtime === 'postgres' && l.mode === 'wait')
    .sort((a, b) => b.concurrency - a.concurrency);
  const seeded = result.history?.seeded;
  // The highest concurrency's, and any other level's over the target.
  const explained = waits.filter((l, i) => i === 0 || (l.rowsFetchedPerRun ?? 0) > ROWS_PER_RUN_TARGET);
  for (const level of [...explained, seeded]) {
    if (!level?.tables.length) continue;
    printTable(
      `Where a run's rows come from (postgres, wait, ${level.concurrency} sessions${level === seeded ? ', with history' : ''}): per run`,
      ['table', 'index scans', 'rows by index', 'seq scans', 'rows by seq scan'],
      level.tables.map((t) => [
        t.table,
        t.idxScans.toFixed(2),
        t.idxRows.toFixed(1),
        t.seqScans.toFixed(2),
        t.seqRows.toFixed(1),
      ]),
      new Set([1, 2, 3, 4]),
    );
  }
  for (const profile of result.profiles) {
    if (!profile.summary) {
      console.log(`\nNo CPU profile was written under ${profile.path}.`);
      continue;
    }
    const { busyPercent, owners, functions, layers } = profile.summary;
    printTable(
      `Where the api's CPU went by layer (${profile.runtime}): a sample is the engine's when the engine's code is on its stack, else the HTTP stack's when that is`,
      ['layer', 'share of busy', 'of which socket writes (system calls)'],
      layers.map((l) => [l.name, `${l.percent.toFixed(1)}%`, `${l.socketWritesPercent.toFixed(0)}%`]),
      new Set([1, 2]),
    );
    printTable(
      `Where the api's CPU went (${profile.runtime}, node --cpu-prof, ${busyPercent.toFixed(0)}% of samples busy): self time by owner`,
      ['owner', 'share of busy'],
      owners.map((o) => [o.name, `${o.percent.toFixed(1)}%`]),
      new Set([1]),
    );
    printTable(
      `Top functions by self time (${profile.runtime})`,
      ['function', 'share of busy'],
      functions.map((f) => [f.name, `${f.percent.toFixed(1)}%`]),
      new Set([1]),
    );
    console.log(`Profile: ${profile.path} (open in Chrome DevTools or speedscope)`);
  }
  printVerdicts(result);
}

function printVerdicts(result: HttpBenchResult): void {
  const find = (runtime: RuntimeName, mode: Mode, concurrency: number) =>
    result.levels.find((l) => l.runtime === runtime && l.mode === mode && l.concurrency === concurrency);
  const top = Math.max(...result.levels.map((l) => l.concurrency));
  const lines: string[] = [];
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT MET');
  const pgTop = find('postgres', 'wait', top);
  const engineTop = result.engine.filter((e) => e.concurrency === top).map((e) => e.runsPerSec);
  if (pgTop && engineTop.length) {
    const mean = engineTop.reduce((a, b) => a + b, 0) / engineTop.length;
    const share = pgTop.perSec / mean;
    const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
    const range =
      engineTop.length > 1
        ? ` (${pct(pgTop.perSec / Math.max(...engineTop))}-${pct(pgTop.perSec / Math.min(...engineTop))} ` +
          `against the engine's ${engineTop.length} runs, ${engineTop.map((r) => r.toFixed(0)).join(' and ')} runs/s)`
        : '';
    lines.push(
      `HTTP >= 80% of the engine at ${top}: ${pct(share)} of their mean${range}, ${verdict(share >= 0.8)}`,
    );
  }
  if (pgTop?.createP50Ms != null) {
    lines.push(
      `session create p50 <= 20 ms at ${top}: ${formatTime(pgTop.createP50Ms)}, ${verdict(pgTop.createP50Ms <= 20)}`,
    );
  }
  if (pgTop?.p50Ms != null && pgTop.p99Ms != null) {
    const r = pgTop.p99Ms / pgTop.p50Ms;
    lines.push(`prompt wait p99 <= 3x p50 at ${top}: ${r.toFixed(1)}x, ${verdict(r <= 3)}`);
  }
  if (pgTop?.rowsFetchedPerRun != null && pgTop.xactsPerRunLessCreates != null) {
    lines.push(
      `rows fetched per run <= ${ROWS_PER_RUN_TARGET}: ${pgTop.rowsFetchedPerRun.toFixed(0)}, ${verdict(pgTop.rowsFetchedPerRun <= ROWS_PER_RUN_TARGET)}`,
    );
    // Judged on the runs' own work: the idle service's timers (measured just before), the table upkeep's ANALYZEs
    // and VACUUMs (a few a minute, not per run) and new connections' setup are printed, not counted.
    const perRun = pgTop.xactsPerRunLessIdle ?? pgTop.xactsPerRunLessCreates;
    // Transactions beyond 2 a run that the idle rate's resolution (one transaction in IDLE_MS) cannot tell from the
    // timers: a residual within it is not counted against the runs.
    const resolution = pgTop.xactAccount ? pgTop.xactAccount.idleResolution / pgTop.xactAccount.runs : 0;
    const idle =
      pgTop.xactsPerRunLessIdle !== null && pgTop.idleXactsPerSec !== null
        ? ` (${pgTop.xactsPerRunLessCreates.toFixed(2)} with the idle service's ${pgTop.idleXactsPerSec.toFixed(1)} tx/s of timers` +
          `, the table upkeep's ${pgTop.upkeepAnalyzes ?? 0} ANALYZEs and ${pgTop.upkeepVacuums ?? 0} VACUUMs` +
          ` and ${pgTop.connectionsOpened ?? 0} connections' setup)`
        : '';
    lines.push(
      `transactions per run <= 2 (+1 per session): ${perRun.toFixed(3)}${idle}, ${verdict(perRun <= 2 + resolution)}`,
    );
    const a = pgTop.xactAccount;
    if (a) {
      const left = a.total - 2 * a.runs - a.sessions - a.idle - a.upkeep - a.connectionSetup;
      lines.push(
        `    in all ${a.total} transactions: ${a.runs} runs x 2 + ${a.sessions} creates + the idle rate's ${a.idle.toFixed(0)}` +
          ` (known to +-${a.idleResolution.toFixed(0)}) + ${a.upkeep} upkeep + ${a.connectionSetup} of connection setup,` +
          ` ${left >= 0 ? 'and' : 'less'} ${Math.abs(left).toFixed(0)}`,
      );
    }
  }
  if (result.history) {
    const { empty, seeded } = result.history;
    const r = seeded.perSec / empty.perSec;
    lines.push(
      `history costs nothing: runs/s with history / empty = ${(r * 100).toFixed(0)}%, ${verdict(r >= 0.9)}; ` +
        `rows/run ${empty.rowsFetchedPerRun?.toFixed(0)} -> ${seeded.rowsFetchedPerRun?.toFixed(0)}`,
    );
  }
  const pgOne = find('postgres', 'wait', 1);
  if (pgOne?.p50Ms != null) {
    lines.push(`wait p50 at 1 <= 5 ms on Postgres: ${formatTime(pgOne.p50Ms)}, ${verdict(pgOne.p50Ms <= 5)}`);
  }
  const embTop = find('embedded', 'wait', top);
  if (embTop) {
    lines.push(
      `embedded rss <= 350 MiB at ${top}: ${embTop.apiRssMiB.toFixed(0)} MiB, ${verdict(embTop.apiRssMiB <= 350)}`,
    );
    if (pgTop) {
      const r = embTop.perSec / pgTop.perSec;
      lines.push(
        `embedded >= 70% of Postgres runs/s at ${top}: ${(r * 100).toFixed(0)}%, ${verdict(r >= 0.7)}`,
      );
    }
  }
  console.log('Targets:');
  for (const line of lines) console.log(`  ${line}`);
}

/** One api process as deployed, its database, and what the bench reads of them. */
class Service {
  private constructor(
    readonly runtime: RuntimeName,
    private readonly proc: ChildProcess,
    private readonly output: string[],
    readonly url: string,
    private readonly database: TestDatabase | null,
    private readonly dataDir: string | null,
    private key: string,
  ) {}

  /** Milliseconds from the process's start until it was warmed (warm()): the start-up a profile skips. */
  readyAfterMs = 0;
  private spawnedAt = 0;

  static async start(
    runtime: RuntimeName,
    profileDir: string | null = null,
    poolMax: number | null = null,
  ): Promise<Service> {
    const port = await freePort();
    const database = runtime === 'postgres' ? await createTestDatabase() : null;
    const dataDir = runtime === 'embedded' ? mkdtempSync(join(tmpdir(), 'canopy-http-bench-')) : null;
    const output: string[] = [];
    const profiling = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
    const spawnedAt = Date.now();
    // Started as `npm start` starts it (flags and malloc settings), so the resident memory is what users see.
    const started = serviceProcess({ embedded: runtime === 'embedded' });
    const proc = spawn(process.execPath, [...started.args, ...profiling, API_MAIN], {
      cwd: ROOT,
      env: {
        ...started.env,
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        LOG_LEVEL: 'warn',
        PORT: String(port),
        HOST: '127.0.0.1',
        CANOPY_ADMIN_KEY: TEST_ADMIN_KEY,
        CANOPY_JWT_SECRET: TEST_JWT_SECRET,
        RATE_LIMIT_PER_KEY: '0',
        RATE_LIMIT_PER_TENANT: '0',
        MAX_CONCURRENT_RUNS_PER_TENANT: '10000',
        ...(poolMax === null ? {} : { DATABASE_POOL_MAX: String(poolMax) }),
        ...(database ? { DATABASE_URL: database.url } : { CANOPY_DATA_DIR: dataDir! }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (d: Buffer) => {
      output.push(d.toString());
      if (output.length > 200) output.shift();
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    const url = `http://127.0.0.1:${port}`;
    await eventually(
      async () => {
        if (proc.exitCode !== null) throw new Error(`the api exited: ${output.join('')}`);
        const res = await fetch(`${url}/readyz`);
        if (res.status !== 200) throw new Error(`not ready: ${res.status}`);
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
    const service = new Service(runtime, proc, output, url, database, dataDir, '');
    service.key = await service.newTenant();
    service.spawnedAt = spawnedAt;
    service.readyAfterMs = Date.now() - spawnedAt;
    return service;
  }

  /**
   * SERVICE_WARMUP_MS of `wait` turns at WARM_CONCURRENCY, measured by nothing (in a tenant of their own); each
   * session is closed after its turns, so none expires during a level (an idle session's close is a transaction).
   */
  async warm(): Promise<void> {
    const key = await this.newTenant();
    const load = await runLoad({
      url: this.url,
      key,
      mode: 'wait',
      concurrency: WARM_CONCURRENCY,
      warmupMs: 0,
      measureMs: SERVICE_WARMUP_MS,
      turns: TURNS_PER_SESSION,
      closeSessions: true,
    });
    const failed = Object.values(load.errors).reduce((a, b) => a + b, 0);
    if (failed > 0) throw new Error(`the warm-up failed: ${JSON.stringify(load.errors)}`);
    this.readyAfterMs = Date.now() - this.spawnedAt;
    await this.statsSettled();
  }

  /** Until the database's counters include every transaction of the last load (STATS_SETTLE_MS). */
  private async statsSettled(): Promise<void> {
    if (this.database) await new Promise((r) => setTimeout(r, STATS_SETTLE_MS));
  }

  async stop(): Promise<void> {
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 15_000);
    await new Promise((r) => (this.proc.exitCode !== null ? r(null) : this.proc.once('exit', r)));
    clearTimeout(timer);
    await this.database?.drop();
    if (this.dataDir) rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** A level on a new tenant, so each starts from an empty tenant (no earlier level's runs). */
  async measureFresh(mode: Mode, concurrency: number, measureMs: number): Promise<HttpLevel> {
    this.key = await this.newTenant();
    return this.measure(mode, concurrency, measureMs);
  }

  async measure(mode: Mode, concurrency: number, measureMs: number): Promise<HttpLevel> {
    const pid = this.proc.pid!;
    // The table counters first: reading them is a connection to the bench's database (two transactions: the
    // backend's start and the query), kept out of the windows measured below.
    const tablesBefore = this.database ? await this.tableCounters() : null;
    const upkeepBefore = this.database ? await this.upkeepCounters() : null;
    // What the service's timers cost with no load, to tell per-run work from background work.
    const idleBefore = this.database ? await this.dbCounters() : null;
    const idleStarted = Date.now();
    if (idleBefore) await new Promise((r) => setTimeout(r, IDLE_MS));
    const idleAfter = idleBefore ? await this.dbCounters() : null;
    const idleXactsPerSec =
      idleBefore && idleAfter
        ? (idleAfter.xacts - idleBefore.xacts) / ((Date.now() - idleStarted) / 1000)
        : null;
    const db = this.database ? await this.dbCounters() : null;
    const ticksBefore = db ? await this.backendCpuTicks() : null;
    const loadStarted = Date.now();
    const statementsBefore = await this.statementsSent();
    const poolWaitBefore = await this.poolWaitSeconds();
    const apiTicks = processTicks(pid);
    let peakRss = rssMiB(pid);
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMiB(pid))), 250);
    const load = await runLoad({
      url: this.url,
      key: this.key,
      mode,
      concurrency,
      warmupMs: WARMUP_MS,
      measureMs,
      turns: TURNS_PER_SESSION,
    });
    clearInterval(sampler);
    const apiCpuPct = ((processTicks(pid) - apiTicks) / CLK_TCK / (load.wallMs / 1000)) * 100;
    // The backends' CPU now (the pool closes idle connections while the counters settle), their counters after.
    const ticksAtEnd = db ? await this.backendCpuTicks() : null;
    await this.statsSettled();
    const dbAfter = db ? await this.dbCounters() : null;
    const windowSec = (Date.now() - loadStarted) / 1000;
    const tablesAfter = db ? await this.tableCounters() : null;
    const statements = (await this.statementsSent()) - statementsBefore;
    const poolWait = (await this.poolWaitSeconds()) - poolWaitBefore;
    const units = mode === 'create' ? load.totalSessions : load.totalTurns;
    const per = (n: number) => (units > 0 ? n / units : Number.NaN);
    const xacts = db && dbAfter ? dbAfter.xacts - db.xacts : null;
    const upkeepAfter = db ? await this.upkeepCounters() : null;
    const analyzes = upkeepBefore && upkeepAfter ? upkeepAfter.analyzes - upkeepBefore.analyzes : null;
    const vacuums = upkeepBefore && upkeepAfter ? upkeepAfter.vacuums - upkeepBefore.vacuums : null;
    // The pool's new connections (it closes idle ones: the quiet moments between levels).
    const connections = db && dbAfter ? dbAfter.sessions - db.sessions : null;
    return {
      runtime: this.runtime,
      mode,
      concurrency,
      perSec: load.perSec,
      p50Ms: load.p50Ms,
      p99Ms: load.p99Ms,
      createP50Ms: load.createP50Ms,
      apiCpuPct,
      dbCpuPct:
        ticksBefore && ticksAtEnd
          ? ((backendTicks(ticksAtEnd) - backendTicks(ticksBefore, ticksAtEnd)) /
              CLK_TCK /
              (load.wallMs / 1000)) *
            100
          : null,
      loadCpuPct: load.cpuPct,
      apiRssMiB: peakRss,
      xactsPerRun: xacts === null ? null : per(xacts),
      xactsPerRunLessCreates: xacts === null || mode === 'create' ? null : per(xacts - load.totalSessions),
      xactsPerRunLessIdle:
        xacts === null || mode === 'create' || idleXactsPerSec === null
          ? null
          : per(
              xacts -
                load.totalSessions -
                idleXactsPerSec * windowSec -
                (analyzes ?? 0) -
                (vacuums ?? 0) -
                2 * (connections ?? 0),
            ),
      idleXactsPerSec,
      xactAccount:
        xacts === null || idleXactsPerSec === null
          ? null
          : {
              total: xacts,
              runs: load.totalTurns,
              sessions: load.totalSessions,
              idle: idleXactsPerSec * windowSec,
              idleResolution: windowSec / (IDLE_MS / 1000),
              upkeep: (analyzes ?? 0) + (vacuums ?? 0),
              connectionSetup: 2 * (connections ?? 0),
            },
      upkeepAnalyzes: analyzes,
      upkeepVacuums: vacuums,
      connectionsOpened: connections,
      rowsFetchedPerRun: db && dbAfter ? per(dbAfter.fetched - db.fetched) : null,
      walSyncsPerRun: db && dbAfter ? per(dbAfter.walSyncs - db.walSyncs) : null,
      statementsPerRun: per(statements),
      poolWaitMsPerRun: per(poolWait * 1000),
      tables:
        tablesBefore && tablesAfter
          ? [...tablesAfter.entries()]
              .map(([table, a]) => {
                const b = tablesBefore.get(table) ?? { idxScans: 0, idxRows: 0, seqScans: 0, seqRows: 0 };
                return {
                  table,
                  idxScans: per(a.idxScans - b.idxScans),
                  idxRows: per(a.idxRows - b.idxRows),
                  seqScans: per(a.seqScans - b.seqScans),
                  seqRows: per(a.seqRows - b.seqRows),
                };
              })
              .filter((t) => t.idxScans + t.seqScans > 0)
          : [],
      errors: load.errors,
    };
  }

  /**
   * Earlier history for the tenant and another one: `sessions` sessions each, `runs` completed runs each,
   * written straight into the database (a superuser connection: the bench seeds, the service never does this).
   */
  async seedHistory(runs: number, sessions: number): Promise<{ runs: number; sessions: number }> {
    if (!this.database) throw new Error('history needs the Postgres runtime');
    const other = await this.newTenant();
    const client = new Client({ connectionString: adminUrlFor(this.database.name) });
    await client.connect();
    try {
      for (const key of [this.key, other]) {
        const prefix = key.slice(0, 10);
        const { rows } = await client.query<{ tenant_id: string }>(
          'SELECT tenant_id FROM api_keys WHERE prefix = $1',
          [prefix],
        );
        const tenant = rows[0]?.tenant_id;
        if (!tenant) throw new Error(`no tenant for key prefix ${prefix}`);
        await client.query(
          `INSERT INTO sessions (tenant_id, id, model, title, created_at, updated_at)
           SELECT $1, 'hist-' || g, 'mock:echo', 'history ' || g, now() - interval '30 days', now() - interval '30 days'
             FROM generate_series(1, $2) g`,
          [tenant, sessions],
        );
        await client.query(
          `INSERT INTO runs (tenant_id, session_id, kind, status, input, usage, attempts, created_at, started_at, finished_at)
           SELECT $1, 'hist-' || (1 + g % $3), 'prompt', 'completed', '{"content":"old"}',
                  '{"inputTokens":3,"outputTokens":4}', 1, t, t, t
             FROM generate_series(1, $2) g, LATERAL (SELECT now() - interval '30 days' + g * interval '1 second' AS t) x`,
          [tenant, runs, sessions],
        );
      }
      await client.query('ANALYZE');
    } finally {
      await client.end();
    }
    return { runs, sessions };
  }

  private async newTenant(): Promise<string> {
    const res = await fetch(`${this.url}/v1/admin/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `http-bench-${Date.now()}-${Math.random().toString(36).slice(2, 8)}` }),
    });
    if (res.status !== 201) throw new Error(`creating a tenant: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { apiKey: string }).apiKey;
  }

  private statementsSent(): Promise<number> {
    return this.metric('canopy_db_round_trips_total');
  }

  private poolWaitSeconds(): Promise<number> {
    return this.metric('canopy_db_pool_wait_seconds_total');
  }

  private async metric(name: string): Promise<number> {
    const text = await (await fetch(`${this.url}/metrics`)).text();
    const match = new RegExp(`^${name} ([\\d.e+-]+)`, 'm').exec(text);
    return match ? Number(match[1]) : Number.NaN;
  }

  /** pg_stat_user_tables of the bench's database (a connection to it: the view is per database). */
  private async tableCounters(): Promise<
    Map<string, { idxScans: number; idxRows: number; seqScans: number; seqRows: number }>
  > {
    const client = new Client({ connectionString: adminUrlFor(this.database!.name) });
    await client.connect();
    try {
      const { rows } = await client.query<{
        relname: string;
        idx_scan: string | null;
        idx_tup_fetch: string | null;
        seq_scan: string;
        seq_tup_read: string;
      }>('SELECT relname, idx_scan, idx_tup_fetch, seq_scan, seq_tup_read FROM pg_stat_user_tables');
      return new Map(
        rows.map((r) => [
          r.relname,
          {
            idxScans: Number(r.idx_scan ?? 0),
            idxRows: Number(r.idx_tup_fetch ?? 0),
            seqScans: Number(r.seq_scan),
            seqRows: Number(r.seq_tup_read),
          },
        ]),
      );
    } finally {
      await client.end();
    }
  }

  /** The table upkeep's ANALYZEs and VACUUMs so far in the bench's database, over every table (catalogs, TOAST). */
  private async upkeepCounters(): Promise<{ analyzes: number; vacuums: number }> {
    const client = new Client({ connectionString: adminUrlFor(this.database!.name) });
    await client.connect();
    try {
      const { rows } = await client.query<{ analyzes: string; vacuums: string }>(
        `SELECT sum(analyze_count + autoanalyze_count) AS analyzes, sum(vacuum_count + autovacuum_count) AS vacuums
           FROM pg_stat_all_tables`,
      );
      return { analyzes: Number(rows[0]?.analyzes ?? 0), vacuums: Number(rows[0]?.vacuums ?? 0) };
    } finally {
      await client.end();
    }
  }

  private async dbCounters(): Promise<{
    xacts: number;
    fetched: number;
    /** Connections opened to the database (each pooled one's setup is a transaction: SET extra_float_digits). */
    sessions: number;
    walSyncs: number;
  }> {
    const client = new Client({ connectionString: adminUrl() });
    await client.connect();
    try {
      const { rows } = await client.query<{ xacts: string; fetched: string; sessions: string }>(
        `SELECT xact_commit + xact_rollback AS xacts, tup_fetched AS fetched, sessions
           FROM pg_stat_database WHERE datname = $1`,
        [this.database!.name],
      );
      const wal = await client.query<{ syncs: string }>('SELECT wal_sync AS syncs FROM pg_stat_wal');
      return {
        xacts: Number(rows[0]?.xacts ?? 0),
        fetched: Number(rows[0]?.fetched ?? 0),
        sessions: Number(rows[0]?.sessions ?? 0),
        walSyncs: Number(wal.rows[0]?.syncs ?? 0),
      };
    } finally {
      await client.end();
    }
  }

  /** CPU ticks of each backend connected to the bench's database now, by pid. */
  private async backendCpuTicks(): Promise<Map<number, number>> {
    const client = new Client({ connectionString: adminUrl() });
    await client.connect();
    try {
      const backends = await client.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [this.database!.name],
      );
      return new Map(backends.rows.map(({ pid }) => [pid, processTicks(pid)]));
    } finally {
      await client.end();
    }
  }
}

interface LoadResult {
  perSec: number;
  p50Ms: number | null;
  p99Ms: number | null;
  samples: number;
  createP50Ms: number | null;
  createP99Ms: number | null;
  totalTurns: number;
  totalSessions: number;
  errors: Record<string, number>;
  cpuPct: number;
  wallMs: number;
}

function runLoad(job: Record<string, unknown>): Promise<LoadResult> {
  return new Promise((resolveLoad, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [LOADGEN, JSON.stringify(job)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`load generator exited with ${code}: ${err}`));
      try {
        resolveLoad({ ...(JSON.parse(out) as LoadResult), wallMs: performance.now() - started });
      } catch (e) {
        reject(new Error(`load generator output: ${out} ${err} (${String(e)})`));
      }
    });
  });
}

/** utime + stime of a process in clock ticks; 0 when it is gone. */
function processTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** Sum of the backends' ticks; with `only`, just those still present there (a backend that left takes its ticks). */
function backendTicks(ticks: Map<number, number>, only?: Map<number, number>): number {
  let sum = 0;
  for (const [pid, t] of ticks) if (!only || only.has(pid)) sum += t;
  return sum;
}

function rssMiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return kb / 1024;
  } catch {
    return 0;
  }
}

function adminUrlFor(database: string): string {
  const u = new URL(adminUrl());
  u.pathname = `/${database}`;
  return u.toString();
}

/**
 * The api's code by layer, for its profile: a sample is the engine's when the engine's code is on its stack (called
 * by a controller or not), else the HTTP stack's when that is (parsing, routing, middleware, the guard, responses).
 */
const API_LAYERS: Layer[] = [
  {
    name: 'engine (Canopy libraries, pg, Prisma)',
    frames:
      /\/libs\/(session|store|core|agent|realtime|manager)\/|node_modules\/(pg|pg-protocol|pg-pool|@prisma)\//,
  },
  {
    name: 'HTTP stack (server, Express, Nest, middleware, auth)',
    frames:
      /^node:_http|node_modules\/(express|router|body-parser|raw-body|@nestjs|nestjs-pino|pino-http|pino|prom-client|nestjs-zod|zod|finalhandler|on-finished|serve-static|send)\/|\/apps\/api\/src\/|\/libs\/(auth|common)\//,
  },
];

/** The summary of the newest CPU profile in a directory (the api writes one as it exits), from skipMs on. */
function newestProfile(dir: string, skipMs: number): ProfileSummary | null {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return files[0] ? summariseCpuProfile(files[0], skipMs, 20, API_LAYERS) : null;
}
