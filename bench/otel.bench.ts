// What OpenTelemetry costs: runs/s of the api process as deployed (bench/lib/processes.ts: `npm start`'s flags) at 100
// concurrent sessions (wait mode, mock:echo, the HTTP load generator in a process of its own), with tracing on at
// 100% sampling (OTEL_TRACES_SAMPLER=always_on, every span exported over OTLP/HTTP protobuf to a local sink that
// reads and counts what it gets without decoding it, the HTTP, Express, pg and ioredis instrumentations on; metrics
// exported too) against the same service with OpenTelemetry off. Both services run side by side on the same runtime
// and are measured in turns, off and on alternately (ABBA), so the machine's drift falls on both; the ratio is on/off
// of the summed runs, and its spread the per-round ratios. Target: on >= 0.9x off. The batch span processor is given
// room for the load (a queue of 65,536 spans, exported every second in batches of 4,096) so it drops nothing it is
// given: the figure is the cost of tracing everything, not of dropping it.
// Besides runs/s, which a shared machine's other work moves, each load is counted: the api's CPU time per run
// (/proc/<pid>/stat over the load and the export after it, divided by the turns it served, warm-up included), and
// for the traced api the spans per run by name and kind and the OTLP bytes per run (the sink's bodies are decoded
// only after the last window).
// Options: --otel-runtimes=postgres,embedded --otel-sessions=100 --otel-rounds=4 --otel-measure-ms=6000
// --otel-profile=DIR (the traced api runs with node --cpu-prof into DIR; its CPU by owner after the warm-up is
// printed) (or CANOPY_BENCH_OTEL_* variables). Only when named (`npm run bench -- otel`).

import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { prepareTemplate } from '../libs/testing/src';
import { machineBusyPercent, machineTicks, processTicks, ticksToMs } from './lib/cpu';
import { summariseCpuProfile, type ProfileSummary } from './lib/cpu-profile';
import { runHttpLoad, type HttpLoadResult } from './lib/load';
import { benchOption, choiceListOption, intOption, type OptionSource } from './lib/options';
import { OtlpSink, spansOf, type SinkTally } from './lib/otlp-sink';
import { SpanCounts, type SpanTally } from './lib/otlp-spans';
import { ApiProcess, type Runtime } from './lib/processes';
import { judge, printTable, ratio, type Verdict } from './lib/report';
import { spread } from './lib/percentile';
import { tracingRatio, type OtelMeasure } from './lib/tracing-ratio';

export type { OtelMeasure };

const SECTION = 'otel';
const TARGET = 0.9;
const TURNS_PER_SESSION = 10;
const WARMUP_MS = 1_500;
const SERVICE_WARMUP_MS = 5_000;
/** After a load, before its CPU is read: the batch span processor's schedule (1 s) and its export. */
const SETTLE_MS = 1_500;

export interface OtelBenchOptions {
  runtimes: Runtime[];
  sessions: number;
  rounds: number;
  measureMs: number;
  /** A directory for the traced api's CPU profile (node --cpu-prof), or none. */
  profileDir: string | null;
}

/** One load of one service, counted. */
export interface OtelLoad extends OtelMeasure {
  /** Turns (runs) the service served over the whole load, warm-up included. */
  turns: number;
  /** The api's CPU time over the load and its settling, per turn; null where /proc cannot be read. */
  cpuMsPerRun: number | null;
  /** The machine's busy share over the load, in % of all its cores. */
  machineBusyPct: number;
  /** What the sink received over the load and its settling (the traced service only). */
  exported: SinkTally | null;
}

export interface OtelRuntimeResult {
  runtime: Runtime;
  measures: OtelLoad[];
  /** Spans per run of the traced loads by scope, name and kind; null when the sink could not keep every body. */
  spans: { perRun: number; tallies: SpanTally[]; runs: number } | null;
  /** The machine's load averages (1, 5, 15 min) before and after the runtime's rounds. */
  loadBefore: number[];
  loadAfter: number[];
  profile: { path: string; summary: ProfileSummary | null } | null;
}

export interface OtelBenchResult {
  options: OtelBenchOptions;
  runtimes: OtelRuntimeResult[];
}

export function otelOptions(from: OptionSource): OtelBenchOptions {
  const { quick } = from;
  const runtimes: Runtime[] = ['postgres', 'embedded'];
  const profile = benchOption(from.argv, from.env, SECTION, 'profile');
  return {
    runtimes: choiceListOption(from, SECTION, 'runtimes', runtimes, quick ? ['postgres'] : runtimes),
    sessions: intOption(from, SECTION, 'sessions', 100, [1, 1_000]),
    rounds: intOption(from, SECTION, 'rounds', quick ? 2 : 4, [1, 50]),
    measureMs: intOption(from, SECTION, 'measure-ms', quick ? 3_000 : 6_000, [1_000, 600_000]),
    profileDir: profile ? resolve(profile) : null,
  };
}

/** The OTEL_* variables of the traced service: everything sampled and exported. */
function tracingEnv(sinkUrl: string): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_TRACES_SAMPLER: 'always_on',
    OTEL_BSP_MAX_QUEUE_SIZE: '65536',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4096',
    OTEL_BSP_SCHEDULE_DELAY: '1000',
    OTEL_METRIC_EXPORT_INTERVAL: '10000',
  };
}

async function load(api: ApiProcess, concurrency: number, measureMs: number): Promise<HttpLoadResult> {
  return runHttpLoad({
    url: api.url,
    key: await api.newTenant('otel'),
    mode: 'wait',
    concurrency,
    warmupMs: WARMUP_MS,
    measureMs,
    turns: TURNS_PER_SESSION,
    closeSessions: true,
  });
}

/** One measured load of a service, with its CPU per run and, for the traced one, what it exported. */
async function countedLoad(
  api: ApiProcess,
  sink: OtlpSink | null,
  options: OtelBenchOptions,
): Promise<OtelLoad> {
  sink?.take();
  const machineFrom = machineTicks();
  const ticksFrom = processTicks(api.pid);
  const result = await load(api, options.sessions, options.measureMs).catch((err: unknown) => {
    throw api.explain(err);
  });
  const machineTo = machineTicks();
  await sleep(SETTLE_MS);
  const ticksTo = processTicks(api.pid);
  return {
    tracing: sink !== null,
    perSec: result.perSec,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    errors: Object.values(result.errors).reduce((a, b) => a + b, 0),
    turns: result.totalTurns,
    cpuMsPerRun:
      ticksFrom !== null && ticksTo !== null && result.totalTurns > 0
        ? ticksToMs(ticksTo - ticksFrom) / result.totalTurns
        : null,
    machineBusyPct: machineBusyPercent(machineFrom, machineTo),
    exported: sink?.take() ?? null,
  };
}

async function measureRuntime(runtime: Runtime, options: OtelBenchOptions): Promise<OtelRuntimeResult> {
  const loadBefore = loadavg();
  const sink = await OtlpSink.start();
  const profileDir = options.profileDir ? join(options.profileDir, runtime) : null;
  if (profileDir) {
    rmSync(profileDir, { recursive: true, force: true });
    mkdirSync(profileDir, { recursive: true });
  }
  const off = await ApiProcess.start({ runtime });
  let on: ApiProcess | null = null;
  let profileSkipMs: number | undefined;
  const measures: OtelLoad[] = [];
  try {
    on = await ApiProcess.start({
      runtime,
      env: tracingEnv(sink.url),
      nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    });
    // Warmed alike: their first thousands of requests run while V8 still compiles the hot paths.
    for (const api of [off, on]) await load(api, 10, SERVICE_WARMUP_MS);
    profileSkipMs = Date.now() - on.spawnedAt;
    for (let round = 0; round < options.rounds; round++) {
      // ABBA: off, on, then on, off in the next round.
      const order = round % 2 === 0 ? [off, on] : [on, off];
      for (const api of order) measures.push(await countedLoad(api, api === on ? sink : null, options));
    }
  } finally {
    await off.stop();
    await on?.stop();
    await sink.close();
  }
  const loadAfter = loadavg();
  return {
    runtime,
    measures,
    spans: spansPerRun(measures),
    loadBefore,
    loadAfter,
    profile: profileDir ? { path: profileDir, summary: newestProfile(profileDir, profileSkipMs ?? 0) } : null,
  };
}

/** The traced loads' spans (decoded now, after the windows), per run. */
function spansPerRun(measures: readonly OtelLoad[]): OtelRuntimeResult['spans'] {
  const counts = new SpanCounts();
  let runs = 0;
  for (const m of measures) {
    if (!m.exported) continue;
    if (!spansOf(m.exported, counts)) return null;
    runs += m.turns;
  }
  return runs > 0 ? { perRun: counts.total / runs, tallies: counts.list(), runs } : null;
}

/** The summary of the newest CPU profile in a directory (the api writes one as it exits), from skipMs on. */
function newestProfile(dir: string, skipMs: number): ProfileSummary | null {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return files[0] ? summariseCpuProfile(files[0], skipMs, 40) : null;
}

export async function runOtelBench(options: OtelBenchOptions): Promise<OtelBenchResult> {
  await prepareTemplate();
  const runtimes: OtelRuntimeResult[] = [];
  for (const runtime of options.runtimes) runtimes.push(await measureRuntime(runtime, options));
  return { options, runtimes };
}

/** CPU ms per run of the traced loads over the untraced ones: summed, and per round. */
export function cpuRatio(measures: readonly OtelLoad[]): { ratio: number; rounds: number[] } {
  const mean = (tracing: boolean) => {
    const known = measures.filter((m) => m.tracing === tracing && m.cpuMsPerRun !== null);
    const turns = known.reduce((t, m) => t + m.turns, 0);
    return turns > 0 ? known.reduce((t, m) => t + m.cpuMsPerRun! * m.turns, 0) / turns : Number.NaN;
  };
  const rounds: number[] = [];
  for (let i = 0; i + 1 < measures.length; i += 2) {
    const on = [measures[i]!, measures[i + 1]!].find((m) => m.tracing);
    const off = [measures[i]!, measures[i + 1]!].find((m) => !m.tracing);
    if (on?.cpuMsPerRun && off?.cpuMsPerRun) rounds.push(on.cpuMsPerRun / off.cpuMsPerRun);
  }
  return { ratio: mean(true) / mean(false), rounds };
}

export function printOtelReport(title: string, result: OtelBenchResult): void {
  const ms = (v: number | null) => (v === null ? '-' : `${v.toFixed(1)} ms`);
  const kib = (bytes: number, runs: number) => (runs > 0 ? `${(bytes / 1024 / runs).toFixed(2)}` : '-');
  const loads = (l: number[]) => l.map((v) => v.toFixed(2)).join(' ');
  for (const r of result.runtimes) {
    printTable(
      `${title}: ${r.runtime}, ${result.options.sessions} sessions, ${result.options.measureMs / 1000} s windows`,
      ['round', 'tracing', 'runs/s', 'p50', 'p99', 'CPU/run', 'OTLP KiB/run', 'machine busy', 'errors'],
      r.measures.map((m, i) => [
        String(Math.floor(i / 2) + 1),
        m.tracing ? 'on (100%)' : 'off',
        m.perSec.toFixed(1),
        ms(m.p50Ms),
        ms(m.p99Ms),
        m.cpuMsPerRun === null ? '-' : `${m.cpuMsPerRun.toFixed(2)} ms`,
        m.exported ? kib(m.exported.traceBytes, m.turns) : '-',
        Number.isFinite(m.machineBusyPct) ? `${m.machineBusyPct.toFixed(0)}%` : '-',
        String(m.errors),
      ]),
      new Set([2, 3, 4, 5, 6, 7, 8]),
    );
    const { ratio: value, rounds } = tracingRatio(r.measures);
    const cpu = cpuRatio(r.measures);
    const cpuOf = (tracing: boolean) =>
      spread(
        r.measures.filter((m) => m.tracing === tracing).map((m) => m.cpuMsPerRun),
        (v) => v.toFixed(2),
      );
    const traced = r.measures.filter((m) => m.exported);
    const turns = traced.reduce((t, m) => t + m.turns, 0);
    const sum = (f: (t: SinkTally) => number) => traced.reduce((t, m) => t + f(m.exported!), 0);
    console.log(
      `runs/s on/off ${ratio(value)} (rounds ${spread(rounds, ratio)}); ` +
        `api CPU per run off ${cpuOf(false)} ms, on ${cpuOf(true)} ms: on/off ${ratio(cpu.ratio)} ` +
        `(rounds ${spread(cpu.rounds, ratio)}; runs/s at a fixed CPU would be ${ratio(1 / cpu.ratio)})`,
    );
    console.log(
      `exported per run: traces ${kib(
        sum((t) => t.traceBytes),
        turns,
      )} KiB in ` +
        `${(sum((t) => t.traceRequests) / Math.max(1, turns)).toFixed(4)} requests, metrics ` +
        `${kib(
          sum((t) => t.metricBytes),
          turns,
        )} KiB; load average before ${loads(r.loadBefore)}, ` +
        `after ${loads(r.loadAfter)}`,
    );
    if (r.spans) {
      printTable(
        `Spans per run (traced ${r.runtime}: ${r.spans.perRun.toFixed(2)} per run over ${r.spans.runs} runs, ` +
          `a session's create and close included, 1 per ${TURNS_PER_SESSION} runs)`,
        ['scope', 'span', 'kind', 'per run'],
        r.spans.tallies.map((t) => [t.scope, t.name, t.kind, (t.count / r.spans!.runs).toFixed(3)]),
        new Set([3]),
      );
    } else {
      console.log('Spans per run: not counted (the sink could not keep every export)');
    }
    if (r.profile) printProfile(r.runtime, r.profile);
  }
}

function printProfile(runtime: Runtime, profile: NonNullable<OtelRuntimeResult['profile']>): void {
  if (!profile.summary) {
    console.log(`\nNo CPU profile was written under ${profile.path}.`);
    return;
  }
  const { busyPercent, owners, functions } = profile.summary;
  const otel = owners.filter((o) => o.name.startsWith('@opentelemetry/'));
  printTable(
    `The traced api's CPU (${runtime}, node --cpu-prof after the warm-up, ${busyPercent.toFixed(0)}% of samples ` +
      `busy): self time by owner; OpenTelemetry's packages ${otel.reduce((t, o) => t + o.percent, 0).toFixed(1)}%`,
    ['owner', 'share of busy'],
    owners.map((o) => [o.name, `${o.percent.toFixed(1)}%`]),
    new Set([1]),
  );
  printTable(
    `Top functions by self time (${runtime}, traced)`,
    ['function', 'share of busy'],
    functions.map((f) => [f.name, `${f.percent.toFixed(1)}%`]),
    new Set([1]),
  );
  console.log(`Profile: ${profile.path} (open in Chrome DevTools or speedscope)`);
}

export function otelVerdicts(result: OtelBenchResult): Verdict[] {
  return result.runtimes.map((r) => {
    const { ratio: value, rounds } = tracingRatio(r.measures);
    return judge(
      SECTION,
      `${r.runtime}: runs/s at ${result.options.sessions} sessions, traced (100%) / off >= ${TARGET}x`,
      {
        value,
        limit: TARGET,
        kind: 'min',
        format: ratio,
        spread: spread(rounds, ratio),
      },
    );
  });
}
