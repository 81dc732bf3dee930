// Cost flat with length: a run of a session whose active path is 10,000 messages, on an 8,000-token window under the
// `truncate` policy, against a run of a 10-message session on the same window — rows fetched per run from the tables
// a run works on (and TOAST), the database's time executing statements per run, and the `wait` answer's p50, as
// ratios measured side by side (target <= 1.5x); the whole database's rows fetched are shown besides (they include
// the service's own timers).
// Each run is a prompt of some 500 tokens answered by mock:echo (its reply as long), like the imported messages, so
// a 10-message session fills most of what the window leaves for a request: both runs send about as much. The short
// sessions stay short: each takes SHORT_RUNS measured runs after one that opens it (10 to 20 messages), then the
// next one takes over, all made before the round; the long one grows by 2 messages a run. A third
// session, the same 10,000 messages on a model with no known window (so every run sends and reads the whole path), is
// the reference: what a run costs when it reads everything. The api process runs on the machine's Postgres.

import { Client } from 'pg';
import { adminUrl } from '../libs/testing/src';
import { requestJson } from './lib/api-client';
import { intOption, type OptionSource } from './lib/options';
import { spread, summarise } from './lib/percentile';
import { ApiProcess } from './lib/processes';
import { formatTime, judge, printTable, ratio, type Verdict } from './lib/report';

const SECTION = 'long';
/** The window of the sessions measured (mock:echo's opts.contextWindow). */
const WINDOW = 8_000;
/** Some 500 tokens of text (o200k_base counts "lorem " as one token). */
const FILLER = 'lorem '.repeat(495);
/**
 * How long after a load the database's counters are read: a backend reports its statistics at most once a second,
 * and the pool's idle connections report when they close.
 */
const STATS_SETTLE_MS = 11_000;
export const LONG_TARGET = 1.5;
/** Measured runs of each short session (after the one that opens it live): 10 messages grow to 20. */
const SHORT_RUNS = 4;

export interface LongBenchOptions {
  /** Messages of the long path. */
  messages: number;
  /** Runs per session per round. */
  runs: number;
  /** Rounds: short, long, reference, one after the other, this many times. */
  rounds: number;
}

export function longOptions(from: OptionSource): LongBenchOptions {
  return {
    messages: intOption(from, SECTION, 'messages', 10_000, [300, 50_000]),
    runs: intOption(from, SECTION, 'runs', 30, [1, 1_000]),
    rounds: intOption(from, SECTION, 'rounds', 3, [1, 20]),
  };
}

type Kind = 'short' | 'long' | 'whole';

interface Measured {
  kind: Kind;
  runs: number;
  /** Rows read from the tables a run works on (sessions, nodes, runs, context summaries, their TOAST) per run. */
  rowsPerRun: number;
  /** Rows fetched in the whole database per run (pg_stat_database.tup_fetched: the service's timers included). */
  dbRowsPerRun: number;
  /** Time the database spent executing statements per run, ms (pg_stat_database.active_time). */
  dbMsPerRun: number;
  waitP50: number;
  waitMax: number;
}

export interface LongBenchResult {
  options: LongBenchOptions;
  rounds: Measured[][];
}

export async function runLongBench(options: LongBenchOptions): Promise<LongBenchResult> {
  const api = await ApiProcess.start({ runtime: 'postgres', env: { IMPORT_BODY_LIMIT: '200mb' } });
  try {
    const key = await api.newTenant('long-bench');
    const call = <T>(method: string, path: string, body?: unknown) =>
      requestJson<T>(api.url, key, method, path, body);
    const database = api.database!;
    const session = async (messages: number, opts: Record<string, unknown>) => {
      const data = Array.from({ length: messages }, (_, i) => ({
        role: i % 2 === 0 ? 'user' : 'assistant',
        content: `message ${i + 1}: ${FILLER}`,
      }));
      const { id } = await call<{ id: string }>('POST', '/v1/sessions/import', {
        format: 'openai',
        data,
        model: 'mock:echo',
      });
      await call('PATCH', `/v1/sessions/${id}`, { opts });
      return id;
    };
    const windowed = { contextWindow: WINDOW, context: { strategy: 'truncate' } };
    const ids: Record<Kind, string> = {
      short: await session(10, windowed),
      long: await session(options.messages, windowed),
      whole: await session(options.messages, {}),
    };
    let shorts: string[] = [];
    const prompt = (kind: Kind, run = 0) =>
      promptSession(
        kind === 'short' && shorts.length > 0 ? shorts[Math.floor(run / SHORT_RUNS)]! : ids[kind],
      );
    const promptSession = async (id: string) => {
      const started = performance.now();
      const res = await call<{ status: string }>('POST', `/v1/sessions/${id}/prompt`, {
        content: `prompt: ${FILLER}`,
        wait: true,
      });
      if (res.status !== 'completed') throw new Error(`a run of ${id} ended ${res.status}`);
      return performance.now() - started;
    };
    // Warmed once each (the first run of a session opens it live: its tree is read once).
    for (const kind of ['short', 'long', 'whole'] as const) await prompt(kind);

    const rounds: Measured[][] = [];
    for (let round = 0; round < options.rounds; round++) {
      const measured: Measured[] = [];
      // The round's short sessions, each opened live by a run of its own before the measurements.
      shorts = [];
      for (let i = 0; i < Math.ceil(options.runs / SHORT_RUNS); i++) {
        const id = await session(10, windowed);
        await promptSession(id);
        shorts.push(id);
      }
      for (const kind of ['short', 'long', 'whole'] as const) {
        const runs = kind === 'whole' ? Math.max(1, Math.ceil(options.runs / 5)) : options.runs;
        await new Promise((r) => setTimeout(r, STATS_SETTLE_MS));
        const before = await dbCounters(database.name, database.url);
        const waits: number[] = [];
        for (let i = 0; i < runs; i++) waits.push(await prompt(kind, i));
        await new Promise((r) => setTimeout(r, STATS_SETTLE_MS));
        const after = await dbCounters(database.name, database.url);
        const latency = summarise(waits);
        measured.push({
          kind,
          runs,
          rowsPerRun: (after.runRows - before.runRows) / runs,
          dbRowsPerRun: (after.fetched - before.fetched) / runs,
          dbMsPerRun: (after.activeMs - before.activeMs) / runs,
          waitP50: latency.p50,
          waitMax: latency.max,
        });
      }
      rounds.push(measured);
    }
    return { options, rounds };
  } catch (err) {
    throw api.explain(err);
  } finally {
    await api.stop();
  }
}

async function withAdmin<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The tables a run reads and writes, whose rows (and TOAST chunks) it fetches. */
const RUN_TABLES = ['sessions', 'nodes', 'runs', 'context_summaries'];

/**
 * The database's counters: rows fetched (pg_stat_database.tup_fetched), time spent executing statements
 * (active_time, ms), and rows read from the run's tables and their TOAST tables (read in the database itself: the
 * table statistics are per database).
 */
async function dbCounters(
  database: string,
  url: string,
): Promise<{ fetched: number; activeMs: number; runRows: number }> {
  const totals = await withAdmin(async (client) => {
    const { rows } = await client.query<{ fetched: string; active: string }>(
      'SELECT tup_fetched AS fetched, active_time AS active FROM pg_stat_database WHERE datname = $1',
      [database],
    );
    return { fetched: Number(rows[0]?.fetched ?? 0), activeMs: Number(rows[0]?.active ?? 0) };
  });
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ rows: string | null }>(
      `SELECT sum(COALESCE(s.idx_tup_fetch, 0) + COALESCE(s.seq_tup_read, 0)) AS rows
         FROM pg_class c
         JOIN pg_stat_all_tables s ON s.relid = c.oid OR s.relid = c.reltoastrelid
        WHERE c.relname = ANY ($1) AND c.relnamespace = 'public'::regnamespace`,
      [RUN_TABLES],
    );
    return { ...totals, runRows: Number(rows[0]?.rows ?? 0) };
  } finally {
    await client.end();
  }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
};

/** Per round, long over short for a figure. */
function ratios(result: LongBenchResult, figure: (m: Measured) => number, of: Kind = 'long'): number[] {
  return result.rounds.map((round) => {
    const at = (kind: Kind) => figure(round.find((m) => m.kind === kind)!);
    return at(of) / Math.max(at('short'), Number.EPSILON);
  });
}

export function printLongReport(title: string, result: LongBenchResult): void {
  const { messages, runs, rounds } = result.options;
  const label: Record<Kind, string> = {
    short: `10-${10 + 2 * (SHORT_RUNS + 1)} messages, truncate`,
    long: `${messages.toLocaleString('en')} messages, truncate`,
    whole: `${messages.toLocaleString('en')} messages, no window (reads all)`,
  };
  printTable(
    `${title}: ${WINDOW.toLocaleString('en')}-token window, ${runs} runs per session per round, ${rounds} rounds`,
    ['round', 'session', 'runs', 'rows/run', 'db rows/run', 'db time/run', 'wait p50', 'wait max'],
    result.rounds.flatMap((round, i) =>
      round.map((m) => [
        String(i + 1),
        label[m.kind],
        String(m.runs),
        m.rowsPerRun.toFixed(0),
        m.dbRowsPerRun.toFixed(0),
        formatTime(m.dbMsPerRun),
        formatTime(m.waitP50),
        formatTime(m.waitMax),
      ]),
    ),
    new Set([2, 3, 4, 5, 6, 7]),
  );
  const row = (name: string, figure: (m: Measured) => number) => {
    const long = ratios(result, figure);
    const whole = ratios(result, figure, 'whole');
    return [name, ratio(median(long)), spread(long, ratio), ratio(median(whole)), spread(whole, ratio)];
  };
  printTable(
    `${title}: as ratios of the 10-message session's, per round (median, spread)`,
    ['figure', 'long', 'spread', 'reads all', 'spread'],
    [
      row('rows fetched per run (its tables)', (m) => m.rowsPerRun),
      row('rows fetched per run (database)', (m) => m.dbRowsPerRun),
      row('database time per run', (m) => m.dbMsPerRun),
      row('wait p50', (m) => m.waitP50),
    ],
    new Set([1, 2, 3, 4]),
  );
}

export function longVerdicts(result: LongBenchResult): Verdict[] {
  const verdict = (target: string, figure: (m: Measured) => number) => {
    const values = ratios(result, figure);
    const messages = result.options.messages.toLocaleString('en');
    return judge(SECTION, `${target} (${messages} vs 10 messages) <= ${LONG_TARGET}x`, {
      value: median(values),
      limit: LONG_TARGET,
      kind: 'max',
      format: ratio,
      spread: `rounds ${spread(values, ratio)}`,
    });
  };
  return [
    verdict('rows fetched per run', (m) => m.rowsPerRun),
    verdict('database time per run', (m) => m.dbMsPerRun),
    verdict('wait p50', (m) => m.waitP50),
  ];
}
