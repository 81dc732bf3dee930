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
// (or CANOPY_BENCH_HTTP_* variables of the same names). The quick run (`npm run bench`): wait mode at 100
// sessions on both runtimes, 3 s windows, no history.

import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { Client } from 'pg';

import { adminUrl, prepareTemplate } from '../libs/testing/src';
import { measureEngineAt } from './engine.bench';
import { cpuPercent, processTicks, ticksToMs } from './lib/cpu';
import { summariseCpuProfile, type Layer, type ProfileSummary } from './lib/cpu-profile';
import { runHttpLoad } from './lib/load';
import { PeakResident } from './lib/memory';
import { benchOption, choiceListOption, intListOption, intOption, type OptionSource } from './lib/options';
import { spread } from './lib/percentile';
import { ApiProcess, type Runtime } from './lib/processes';
import { formatTime, judge, notJudged, percent, printTable, ratio, type Verdict } from './lib/report';

/** The target: rows fetched (pg_stat_database.tup_fetched) per run. */
const ROWS_PER_RUN_TARGET = 50;

const TURNS_PER_SESSION = 10;
const WARMUP_MS = 1_500;
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

type Mode = 'wait' | 'stream' | 'branch' | 'create';
type RuntimeName = Runtime;

export interface HttpBenchOptions {
  modes: Mode[];
  levels: number[];
  runtimes: RuntimeName[];
  measureMs: number;
  /**
   * Before its first level, each service (and the in-process engine, once) plays this long at WARM_CONCURRENCY,
   * unmeasured: a process's first thousands of requests run while V8 still compiles its hot functions (one pair of
   * runs: wait p50 at one session 7.2 ms measured right after boot, 5.9 ms after another level), and a fresh
   * database plans on tables not yet analyzed (133 rows read per run against 27). The levels then measure a running
   * service.
   */
  serviceWarmupMs: number;
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
  options: HttpBenchOptions;
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

export function httpBenchOptions(from: OptionSource): HttpBenchOptions {
  const { quick } = from;
  const modes: Mode[] = ['wait', 'stream', 'branch', 'create'];
  const runtimes: RuntimeName[] = ['postgres', 'embedded'];
  const profile = benchOption(from.argv, from.env, 'http', 'profile');
  const pool = benchOption(from.argv, from.env, 'http', 'pool');
  return {
    modes: choiceListOption(from, 'http', 'modes', modes, quick ? ['wait'] : modes),
    levels: intListOption(from, 'http', 'levels', quick ? [100] : [1, 10, 100], [1, 1_000]),
    runtimes: choiceListOption(from, 'http', 'runtimes', runtimes, runtimes),
    measureMs: intOption(from, 'http', 'measure-ms', quick ? 3_000 : 6_000, [1_000, 600_000]),
    serviceWarmupMs: quick ? 3_000 : 8_000,
    history: (benchOption(from.argv, from.env, 'http', 'history') ?? (quick ? 'false' : 'true')) !== 'false',
    profileDir: profile ? resolve(profile) : null,
    poolMax: pool === undefined ? null : intOption(from, 'http', 'pool', 0, [1, 200]),
  };
}

export async function runHttpBench(options: HttpBenchOptions): Promise<HttpBenchResult> {
  await prepareTemplate();
  const levels: HttpLevel[] = [];
  let history: HttpBenchResult['history'] = null;
  const profiles: HttpBenchResult['profiles'] = [];
  const engine: HttpBenchResult['engine'] = [];
  const compareEngine = options.runtimes.includes('postgres') && options.modes.includes('wait');
  // The engine is measured over the same windows as the HTTP levels, and warmed as long as the services.
  const engineWindow = { warmupMs: WARMUP_MS, measureMs: options.measureMs };
  const engineWarmup = { warmupMs: 0, measureMs: options.serviceWarmupMs };
  for (const runtime of options.runtimes) {
    if (runtime === 'postgres' && compareEngine) {
      // The engine runs in this process: warmed once, as the service is, before its first measured level.
      await measureEngineAt(WARM_CONCURRENCY, TURNS_PER_SESSION, engineWarmup);
      for (const concurrency of options.levels) {
        engine.push({
          concurrency,
          when: 'before',
          ...(await measureEngineAt(concurrency, TURNS_PER_SESSION, engineWindow)),
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
      await service.warm(options.serviceWarmupMs);
      for (const mode of options.modes) {
        for (const concurrency of options.levels) {
          levels.push(await service.measure(mode, concurrency, options.measureMs));
        }
      }
      if (runtime === 'postgres' && compareEngine) {
        // Right after the HTTP levels (the service idles meanwhile: its timers, ~1 transaction a second).
        const top = Math.max(...options.levels);
        engine.push({
          concurrency: top,
          when: 'after',
          ...(await measureEngineAt(top, TURNS_PER_SESSION, engineWindow)),
        });
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
  return { options, levels, engine, history, measureMs: options.measureMs, profiles };
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
      `each service first warmed by ${result.options.serviceWarmupMs / 1000} s of unmeasured turns at ${WARM_CONCURRENCY} sessions (the engine ` +
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
  printTransactionAccount(result);
}

/** Where the transactions of the top level on Postgres went: runs, creates, timers, upkeep, connections. */
function printTransactionAccount(result: HttpBenchResult): void {
  const a = topWait(result, 'postgres')?.xactAccount;
  if (!a) return;
  const left = a.total - 2 * a.runs - a.sessions - a.idle - a.upkeep - a.connectionSetup;
  console.log(
    `Transactions at the top level: ${a.total} in all: ${a.runs} runs x 2 + ${a.sessions} creates + the idle ` +
      `rate's ${a.idle.toFixed(0)} (known to +-${a.idleResolution.toFixed(0)}) + ${a.upkeep} upkeep + ` +
      `${a.connectionSetup} of connection setup, ${left >= 0 ? 'and' : 'less'} ${Math.abs(left).toFixed(0)}.`,
  );
}

/** The `wait` level at the highest concurrency of a runtime. */
function topWait(result: HttpBenchResult, runtime: RuntimeName): HttpLevel | undefined {
  const top = Math.max(...result.levels.map((l) => l.concurrency));
  return result.levels.find((l) => l.runtime === runtime && l.mode === 'wait' && l.concurrency === top);
}

/**
 * The targets, each a ratio of figures of this run or a count: HTTP against the in-process engine, the tail against
 * the median, the database's work per run, the embedded runtime against Postgres and its resident memory, and a
 * seeded history against an empty tenant.
 */
export function httpVerdicts(result: HttpBenchResult): Verdict[] {
  const section = 'http';
  const verdicts: Verdict[] = [];
  const pgTop = topWait(result, 'postgres');
  const embTop = topWait(result, 'embedded');
  const top = pgTop?.concurrency ?? embTop?.concurrency;
  const engineTop = result.engine.filter((e) => e.concurrency === top).map((e) => e.runsPerSec);
  if (pgTop && engineTop.length) {
    const mean = engineTop.reduce((a, b) => a + b, 0) / engineTop.length;
    verdicts.push(
      judge(section, `runs/s >= 80% of the in-process engine at ${top} sessions`, {
        value: pgTop.perSec / mean,
        limit: 0.8,
        kind: 'min',
        format: percent,
        spread: `${spread(
          engineTop.map((e) => pgTop.perSec / e),
          percent,
        )} against the engine before/after (${engineTop.map((r) => r.toFixed(0)).join(', ')} runs/s)`,
      }),
    );
  }
  if (pgTop?.p50Ms != null && pgTop.p99Ms != null) {
    verdicts.push(
      judge(section, `prompt wait p99 <= 3x p50 at ${top} sessions`, {
        value: pgTop.p99Ms / pgTop.p50Ms,
        limit: 3,
        kind: 'max',
        format: ratio,
        spread: `p50/p99 ${formatTime(pgTop.p50Ms)}/${formatTime(pgTop.p99Ms)}`,
      }),
    );
  }
  if (pgTop?.rowsFetchedPerRun != null) {
    verdicts.push(
      judge(section, `rows fetched per run <= ${ROWS_PER_RUN_TARGET}`, {
        value: pgTop.rowsFetchedPerRun,
        limit: ROWS_PER_RUN_TARGET,
        kind: 'max',
        format: (v) => v.toFixed(0),
        spread: `${pgTop.statementsPerRun.toFixed(1)} statements per run`,
      }),
    );
  }
  if (pgTop?.xactsPerRunLessCreates != null) {
    // Judged on the runs' own work: the idle service's timers (measured just before), the table upkeep's ANALYZEs
    // and VACUUMs (a few a minute, not per run) and new connections' setup are printed, not counted. Transactions
    // beyond 2 a run that the idle rate's resolution (one transaction in IDLE_MS) cannot tell from the timers are
    // not counted against the runs.
    const perRun = pgTop.xactsPerRunLessIdle ?? pgTop.xactsPerRunLessCreates;
    const resolution = pgTop.xactAccount ? pgTop.xactAccount.idleResolution / pgTop.xactAccount.runs : 0;
    verdicts.push(
      judge(section, 'transactions per run <= 2 (+1 per session)', {
        value: perRun,
        limit: 2 + resolution,
        kind: 'max',
        format: (v) => v.toFixed(3),
        spread:
          `${pgTop.xactsPerRunLessCreates.toFixed(2)} with the timers' ` +
          `${pgTop.idleXactsPerSec?.toFixed(1) ?? '?'} tx/s, upkeep and connection setup`,
      }),
    );
  }
  if (embTop) {
    verdicts.push(
      judge(section, `embedded resident memory <= 350 MiB at ${top} sessions`, {
        value: embTop.apiRssMiB,
        limit: 350,
        kind: 'max',
        format: (v) => `${v.toFixed(0)} MiB`,
        spread: 'peak over the load',
      }),
    );
    verdicts.push(
      pgTop
        ? judge(section, `embedded runs/s >= 70% of Postgres's at ${top} sessions`, {
            value: embTop.perSec / pgTop.perSec,
            limit: 0.7,
            kind: 'min',
            format: percent,
            spread:
              `${embTop.perSec.toFixed(0)} / ${pgTop.perSec.toFixed(0)} runs/s; p50/p99 embedded ` +
              `${formatTime(embTop.p50Ms ?? Number.NaN)}/${formatTime(embTop.p99Ms ?? Number.NaN)}`,
          })
        : notJudged(section, "embedded runs/s >= 70% of Postgres's", 'Postgres not run'),
    );
  }
  if (result.history) {
    const { empty, seeded } = result.history;
    verdicts.push(
      judge(section, 'runs/s with 100,000 earlier runs >= 90% of an empty tenant', {
        value: seeded.perSec / empty.perSec,
        limit: 0.9,
        kind: 'min',
        format: percent,
        spread: `rows/run ${empty.rowsFetchedPerRun?.toFixed(0)} -> ${seeded.rowsFetchedPerRun?.toFixed(0)}`,
      }),
    );
  }
  return verdicts;
}

/** One api process as deployed, its database, and what the bench reads of them. */
class Service {
  private constructor(
    private readonly api: ApiProcess,
    private key: string,
  ) {}

  /** Milliseconds from the process's start until it was warmed (warm()): the start-up a profile skips. */
  readyAfterMs = 0;

  static async start(
    runtime: RuntimeName,
    profileDir: string | null = null,
    poolMax: number | null = null,
  ): Promise<Service> {
    const api = await ApiProcess.start({
      runtime,
      nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
      env: poolMax === null ? {} : { DATABASE_POOL_MAX: String(poolMax) },
    });
    const service = new Service(api, await api.newTenant('http-bench'));
    service.readyAfterMs = api.readyAfterMs;
    return service;
  }

  get runtime(): RuntimeName {
    return this.api.runtime;
  }

  private get url(): string {
    return this.api.url;
  }

  private get database() {
    return this.api.database;
  }

  /**
   * `warmupMs` of `wait` turns at WARM_CONCURRENCY, measured by nothing (in a tenant of their own); each session is
   * closed after its turns, so none expires during a level (an idle session's close is a transaction).
   */
  async warm(warmupMs: number): Promise<void> {
    const load = await runHttpLoad({
      url: this.url,
      key: await this.newTenant(),
      mode: 'wait',
      concurrency: WARM_CONCURRENCY,
      warmupMs: 0,
      measureMs: warmupMs,
      turns: TURNS_PER_SESSION,
      closeSessions: true,
    });
    const failed = Object.values(load.errors).reduce((a, b) => a + b, 0);
    if (failed > 0) throw new Error(`the warm-up failed: ${JSON.stringify(load.errors)}`);
    this.readyAfterMs = Date.now() - this.api.spawnedAt;
    await this.statsSettled();
  }

  /** Until the database's counters include every transaction of the last load (STATS_SETTLE_MS). */
  private async statsSettled(): Promise<void> {
    if (this.database) await new Promise((r) => setTimeout(r, STATS_SETTLE_MS));
  }

  stop(): Promise<void> {
    return this.api.stop();
  }

  /** A level on a new tenant, so each starts from an empty tenant (no earlier level's runs). */
  async measureFresh(mode: Mode, concurrency: number, measureMs: number): Promise<HttpLevel> {
    this.key = await this.newTenant();
    return this.measure(mode, concurrency, measureMs);
  }

  async measure(mode: Mode, concurrency: number, measureMs: number): Promise<HttpLevel> {
    const pid = this.api.pid;
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
    const apiTicks = processTicks(pid) ?? Number.NaN;
    const rss = new PeakResident(pid);
    const load = await runHttpLoad({
      url: this.url,
      key: this.key,
      mode,
      concurrency,
      warmupMs: WARMUP_MS,
      measureMs,
      turns: TURNS_PER_SESSION,
    });
    const peakRss = rss.stop();
    const apiCpuPct = cpuPercent(ticksToMs((processTicks(pid) ?? Number.NaN) - apiTicks), load.wallMs);
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
          ? cpuPercent(
              ticksToMs(backendTicks(ticksAtEnd) - backendTicks(ticksBefore, ticksAtEnd)),
              load.wallMs,
            )
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

  private newTenant(): Promise<string> {
    return this.api.newTenant('http-bench');
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
      return new Map(backends.rows.map(({ pid }) => [pid, processTicks(pid) ?? 0]));
    } finally {
      await client.end();
    }
  }
}

/** Sum of the backends' ticks; with `only`, just those still present there (a backend that left takes its ticks). */
function backendTicks(ticks: Map<number, number>, only?: Map<number, number>): number {
  let sum = 0;
  for (const [pid, t] of ticks) if (!only || only.has(pid)) sum += t;
  return sum;
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
