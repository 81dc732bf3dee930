// Benchmark of the distributed runtime as deployed: 2 api + 2 worker processes (the built deployables, started with
// node by @canopy/testing's Cluster) over a fresh database on the machine's Postgres and a key prefix of their own on
// its Redis. At each scale (100, 300 and 1,000 sessions by default), every session streams one mock:script reply of 200
// deltas at 50 ms per delta, and is subscribed over WebSocket on BOTH apis (a connection per 100 sessions on each api,
// the default WS_MAX_SUBSCRIPTIONS). Per scale: delta events delivered per second (and the original deltas they carry:
// the engine merges deltas for EVENT_COALESCE_MS before publishing), latency from the worker's publish (the event's
// `at`, stamped by the Redis event bus) to the bench's receipt (Date.now(), same machine clock), Redis commands per
// delivered delta (INFO total_commands_processed around the streaming phase), and violations: per session and
// subscriber, seqs that are not consecutive, a text that is not the scripted reply, or two apis that delivered
// different seqs. In the same run, the machine's raw Redis PUBLISH rate (a pipelined ioredis loop to a channel with one
// subscriber) is the limit the delivery rate is set against.
// In the same run and the same process layout (2 api + 2 worker processes and Redis), a baseline relay
// (bench/relay: workers PUBLISH each delta, apis SUBSCRIBE per session and write it to the WebSocket
// subscribers, nothing else) is measured the same way, and Canopy is reported as ratios of it: p50, p99 and CPU
// per delivered event. Every process of both runs carries an event-loop delay probe (bench/relay/loop-delay.cjs),
// and its p99 over the streaming phase is reported per process, with its garbage-collection pauses.
// `--cluster-profile` (or CANOPY_BENCH_CLUSTER_PROFILE=1) also profiles each process's CPU and allocations over the
// last scale's streaming phase and prints its top functions by self time and by bytes allocated;
// CANOPY_BENCH_PROFILE_DIR=<dir> keeps the profiles there (`canopy-worker-1.cpuprofile`, `.heapprofile`).
// CANOPY_BENCH_NODE_OPTIONS adds node options to Canopy's processes (a tuning against the same run's baseline).
// Each deployment first plays an unmeasured pass of 200 sessions (`--cluster-warmup=N`, 0 for none), so the figures are
// those of warm processes (code optimized, the pools' connections open with their plans made), as a deployment runs.
// The CPU per delivered event is also printed by part (workers, apis, Redis, Postgres) for both deployments.
// Scales: CANOPY_BENCH_CLUSTER_SESSIONS=50 or `npm run bench -- cluster --cluster-sessions=50,200`.

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { Redis } from 'ioredis';
import WebSocket from 'ws';

import { escapeGlob } from '../libs/realtime/src/redis/redis-keys';
import { Cluster, freePort, prepareTemplate } from '../libs/testing/src';
import {
  summariseCpuProfile,
  summariseHeapProfile,
  type AllocationSummary,
  type ProfileSummary,
} from './cpu-profile';
import { cpuPerEventByPart, DEPLOYMENT_PARTS, describeCpuByPart } from './cpu-parts';
import { serviceProcess } from '../scripts/lib/service-process.mjs';
import { benchOption } from './options';
import { formatTime, printTable } from './report';

const DEFAULT_SCALES = [100, 300, 1_000] as const;
const DEFAULT_WARMUP_SESSIONS = 200;
const DELTAS = 200;
const DELTA_MS = 50;
/**
 * Sessions per WebSocket connection: the deployment's default WS_MAX_SUBSCRIPTIONS. Every session is subscribed once
 * on each api, over ceil(sessions / this) connections per api (a client multiplexing 500 sessions on one connection
 * held a fifth of the buffer per session, and a stall of the bench's own loop of ~0.4 s got it cut).
 */
const SESSIONS_PER_SOCKET = 100;
const APIS = 2;
const WORKERS = 2;
/** Requests (session creation, prompts) and subscribes in flight at once. */
const REQUESTS_IN_FLIGHT = 50;
const RAW_MS = 3_000;
/** The target: p99 emit -> receipt under this at TARGET_SESSIONS, with no event lost or reordered. */
const TARGET_P99_MS = 50;
const TARGET_SESSIONS = 1_000;

/** The scripted reply: DELTAS words, one delta each (mock:script streams a text word by word). */
const REPLY = Array.from({ length: DELTAS }, (_, i) => `word${i}`).join(' ');

export interface ClusterLevel {
  sessions: number;
  /** Runs whose end (the commit's `store` event) reached both subscribers. */
  runsCompleted: number;
  /** Most runs streaming at once (from a run's first event to its end, as api-1's subscriber saw them). */
  peakStreaming: number;
  /** From the first prompt sent to the last run's end on both subscribers. */
  wallMs: number;
  /** text_delta events received, both subscribers counted. */
  deltaEvents: number;
  /** Events of every type published during the phase (received by one subscriber per session). */
  publishedEvents: number;
  /** The scripted deltas those events carry (a coalesced event carries several). */
  originalDeltas: number;
  /** Emit (the event's `at`) -> receipt, over every text_delta received. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** p99 over the deltas received once every prompt had been answered (all runs streaming, no ramp). */
  steadyP99Ms: number;
  /** Average size of a text_delta WebSocket frame, in bytes. */
  deltaFrameBytes: number;
  /** Redis commands processed during the streaming phase (every client of the machine's Redis). */
  redisCommands: number;
  /**
   * The event bus's own commands over the phase (INFO commandstats): XADD, PUBLISH / SPUBLISH and the stream's
   * EXPIRE, less the same commands of others (otherPublishes, queueEventAppends). Everything else Redis ran (the live registry, timers, BullMQ, rate limits) is work per run or per
   * second, not per event.
   */
  busCommands: number;
  /**
   * PUBLISHes over the phase on channels other than the event bus's (the activity feed, run control), counted by a
   * pattern subscriber: taken out of busCommands (INFO cannot tell the PUBLISHes apart), left in redisCommands.
   */
  otherPublishes: number;
  /** XADDs of BullMQ's scripts to its queues' event streams over the phase: taken out of busCommands too. */
  queueEventAppends: number;
  /** The commands called most over the phase (INFO commandstats), most first. */
  topCommands: Array<{ name: string; calls: number }>;
  /** How long sending every prompt took (the runs start over this time). */
  promptMs: number;
  /** Session-subscriber pairs with a gap, a step back, a wrong text, or seqs differing between the apis. */
  violations: number;
  /**
   * The bench's own WebSocket connections an api cut as slow consumers (more than its buffer limit waited for the
   * bench to read): the bench, not the deployment, fell behind, and the runs on them never complete. A level with
   * any is not judged.
   */
  benchSocketsCut: number;
  /** A few examples of the violations, for the report. */
  violationExamples: string[];
  /** CPU time over the streaming phase, in % of one core, by process (api-1, worker-2, redis, bench ...). */
  cpuPct: Record<string, number>;
  /** The whole machine's busy CPU over the phase, in % of all its cores (/proc/stat); NaN where unknown. */
  machineCpuPct: number;
  /** CPU seconds of the deployment (apis, workers, Redis, Postgres) per text_delta event delivered. */
  cpuMsPerEvent: number;
  /**
   * Event-loop delay over the streaming phase, by process: p99 and max in ms, and the garbage collector's pauses
   * (total, longest, how many of 5 ms or more).
   */
  loopDelay: Record<
    string,
    {
      p99: number;
      max: number;
      gc: ClusterGc | null;
    }
  >;
}

/** A process's garbage-collection pauses over a phase (ms). */
export interface ClusterGc {
  totalMs: number;
  maxMs: number;
  over5ms: number;
  count: number;
  /** By kind (minor = scavenge, major = mark-compact, incremental marking steps, weak callbacks). */
  kinds?: Record<string, { count: number; totalMs: number; maxMs: number }>;
}

export interface ClusterBenchResult {
  levels: ClusterLevel[];
  /** The baseline relay at the same scales. */
  baseline: ClusterLevel[];
  /** Raw PUBLISH messages received per second by one subscriber. */
  rawPublishPerSec: number;
  rawPayloadBytes: number;
  coalesceMs: number;
  /** Sessions of the unmeasured pass each deployment played before its scales (0: none). */
  warmupSessions: number;
  /** CPU profiles over the last scale's streaming phase, by deployment and process (--cluster-profile). */
  profiles: Array<{
    deployment: 'canopy' | 'baseline';
    process: string;
    summary: ProfileSummary;
    /** What the process allocated over the phase, by function (sampling heap profiler). */
    allocations: AllocationSummary | null;
  }>;
}

/** Whether to profile each process's CPU: `--cluster-profile` or CANOPY_BENCH_CLUSTER_PROFILE=1. */
export function clusterProfile(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  return argv.includes('--cluster-profile') || env.CANOPY_BENCH_CLUSTER_PROFILE === '1';
}

/**
 * Sessions of the unmeasured pass each deployment plays before its scales (`--cluster-warmup=N`, 0 for none):
 * figures of warm processes, as a deployment's are (its code optimized, its pools' connections open with their
 * plans made), as the HTTP bench's are.
 */
export function clusterWarmup(argv: readonly string[], env: NodeJS.ProcessEnv): number {
  const text = benchOption(argv, env, 'cluster', 'warmup');
  if (text === undefined || text.trim() === '') return DEFAULT_WARMUP_SESSIONS;
  const sessions = Number(text.trim());
  if (!Number.isInteger(sessions) || sessions < 0 || sessions > 5_000) {
    throw new Error(`cluster warm-up sessions must be an integer from 0 to 5000, got "${text}"`);
  }
  return sessions;
}

/** The scales to run: `--cluster-sessions=50,200` or CANOPY_BENCH_CLUSTER_SESSIONS, else 100, 300 and 1,000. */
export function clusterScales(argv: readonly string[], env: NodeJS.ProcessEnv): number[] {
  const text = benchOption(argv, env, 'cluster', 'sessions');
  if (text === undefined || text.trim() === '') return [...DEFAULT_SCALES];
  const scales = text.split(',').map((s) => Number(s.trim()));
  if (scales.some((n) => !Number.isInteger(n) || n < 1 || n > 5_000)) {
    throw new Error(`cluster sessions must be integers from 1 to 5000, got "${text}"`);
  }
  return scales;
}

export async function runClusterBench(
  scales: readonly number[],
  profile = false,
  warmupSessions = DEFAULT_WARMUP_SESSIONS,
): Promise<ClusterBenchResult> {
  await prepareTemplate();
  const largest = Math.max(...scales, warmupSessions);
  const coalesceMs = 15;
  const probe = LoopDelayProbe.create(profile);
  const cluster = new Cluster({
    apis: APIS,
    workers: WORKERS,
    prefixBase: 'cbench',
    // Started with the node flags `npm start` gives the distributed deployables.
    nodeArgs: serviceProcess({ embedded: false }).args,
    env: {
      // Each worker can take every run of the largest scale, whatever BullMQ's distribution.
      WORKER_CONCURRENCY: String(largest),
      MAX_CONCURRENT_RUNS_PER_TENANT: String(Math.max(100, largest * 2)),
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_TENANT: '0',
      // 4 processes x 10 = 40 of the machine's 100 Postgres connections.
      DATABASE_POOL_MAX: '10',
      // The Cluster's test default (2 s) presumes an idle machine; under this load a busy event loop must not
      // make BullMQ hand a live run to the other worker.
      RUN_LOCK_DURATION_MS: '30000',
      EVENT_COALESCE_MS: String(coalesceMs),
      SHUTDOWN_GRACE_MS: '5000',
      ...probe.env,
      // Extra node options for Canopy's processes only (a deployment's tuning to compare): CANOPY_BENCH_NODE_OPTIONS.
      ...(process.env.CANOPY_BENCH_NODE_OPTIONS
        ? { NODE_OPTIONS: `${probe.env.NODE_OPTIONS} ${process.env.CANOPY_BENCH_NODE_OPTIONS}` }
        : {}),
    },
  });
  const stats = new Redis(cluster.redisUrl);
  const relay = new RelayDeployment(cluster.redisUrl, probe.env);
  try {
    await cluster.start();
    const raw = await rawPublishRate(cluster.redisUrl, `${cluster.prefix}:bench:raw`);
    const levels: ClusterLevel[] = [];
    // Channels Canopy PUBLISHes on besides the event bus's, counted apart (the activity feed, run control).
    const notBus = {
      channels: [`${escapeGlob(cluster.prefix)}:activity:*`, `${escapeGlob(cluster.prefix)}:run-control*`],
      queueEvents: `${escapeGlob(cluster.prefix)}:bull:*:events`,
    };
    if (warmupSessions > 0) await measureScale(cluster, stats, warmupSessions, probe, notBus);
    for (const sessions of scales) levels.push(await measureScale(cluster, stats, sessions, probe, notBus));
    const canopyPids = pidsOf(cluster);
    await cluster.stop();
    await relay.start();
    const baseline: ClusterLevel[] = [];
    if (warmupSessions > 0) await measureScale(relay, stats, warmupSessions, probe);
    for (const sessions of scales) baseline.push(await measureScale(relay, stats, sessions, probe));
    const relayPids = pidsOf(relay);
    await relay.stop();
    const profiles = profile
      ? [...probe.profiles('canopy', canopyPids), ...probe.profiles('baseline', relayPids)]
      : [];
    return {
      levels,
      baseline,
      rawPublishPerSec: raw.perSec,
      rawPayloadBytes: raw.payloadBytes,
      coalesceMs,
      warmupSessions,
      profiles,
    };
  } catch (err) {
    for (const p of cluster.processes.values()) {
      const tail = p.output.join('').split('\n').slice(-15).join('\n');
      console.error(`--- ${p.name} (last lines) ---\n${tail}`);
    }
    throw err;
  } finally {
    stats.disconnect();
    await cluster.stop();
    await relay.stop();
    probe.remove();
  }
}

/** Prints one row per scale, the CPU by process, and the verdict on the target. */
export function printClusterReport(title: string, result: ClusterBenchResult): void {
  const header = [
    'deployment',
    'sessions',
    'runs',
    'peak',
    'wall',
    'delta ev/s',
    'orig deltas/s',
    'p50',
    'p99',
    'max',
    'p99 steady',
    'cmds/delta ev',
    'cmds/orig delta',
    'of raw',
    'lost/reord',
    'target',
  ];
  // The baseline's own rows too: how fast it delivered, and how busy it left the machine, at the same scales.
  const labelled = [
    ...result.levels.map((l) => ['canopy', l] as const),
    ...result.baseline.map((l) => ['baseline', l] as const),
  ];
  const rows = labelled.map(([deployment, l]) => {
    const secs = l.wallMs / 1000;
    return [
      deployment,
      l.sessions.toLocaleString('en-US'),
      `${l.runsCompleted}/${l.sessions}`,
      l.peakStreaming.toLocaleString('en-US'),
      formatTime(l.wallMs),
      Math.round(l.deltaEvents / secs).toLocaleString('en-US'),
      Math.round(l.originalDeltas / secs).toLocaleString('en-US'),
      formatTime(l.p50Ms),
      formatTime(l.p99Ms),
      formatTime(l.maxMs),
      formatTime(l.steadyP99Ms),
      (l.redisCommands / l.deltaEvents).toFixed(2),
      (l.redisCommands / (l.runsCompleted * DELTAS)).toFixed(2),
      `${((l.deltaEvents / secs / result.rawPublishPerSec) * 100).toFixed(1)}%`,
      String(l.violations),
      (deployment === 'canopy' ? verdict(l) : l.benchSocketsCut > 0 ? 'INVALID' : null) ?? '-',
    ];
  });
  printTable(title, header, rows, new Set(header.keys()));
  const ideal = (n: number) => Math.round((n * APIS * DELTAS) / ((DELTAS * DELTA_MS) / 1000));
  console.log(
    `${APIS} api + ${WORKERS} worker processes (built deployables); per session one mock:script reply of ${DELTAS} ` +
      `deltas at ${DELTA_MS} ms each (~${(DELTAS * DELTA_MS) / 1000} s), subscribed over WebSocket on both apis ` +
      `(a connection per ${SESSIONS_PER_SOCKET} sessions on each api); prompts over HTTP, alternating apis; ` +
      (result.warmupSessions > 0
        ? `each deployment first played ${result.warmupSessions} sessions the same way, unmeasured (warm processes).`
        : 'no warm-up (cold processes).'),
  );
  console.log(
    `delta ev/s: text_delta events received per second of wall time, both subscribers counted (ideal ` +
      `${result.levels.map((l) => `${ideal(l.sessions).toLocaleString('en-US')} at ${l.sessions}`).join(', ')}); ` +
      `orig deltas/s: the scripted deltas they carry (EVENT_COALESCE_MS=${result.coalesceMs} merges deltas ` +
      `that come within the window).`,
  );
  console.log(
    "p50/p99/max: the event's `at` (stamped by the worker's Redis event bus at publish, after the coalescing " +
      "window) to Date.now() at the bench's WebSocket 'message', over every text_delta received; p99 steady: " +
      'over those received after the last prompt was answered (every run streaming, no session creation, ' +
      'prompt or run start competing for the CPU).',
  );
  console.log(
    'cmds: Redis total_commands_processed over the streaming phase (prompts to the last run end, commands run ' +
      'by scripts included, every client of the Redis included) per text_delta event received / per scripted delta.',
  );
  console.log(
    `of raw: delta ev/s as a share of the raw Redis PUBLISH rate measured in this run: ` +
      `${Math.round(result.rawPublishPerSec).toLocaleString('en-US')} msgs/s (ioredis, pipelined, ` +
      `${result.rawPayloadBytes}-byte payload shaped like a published delta, one subscriber, ${RAW_MS / 1000} s).`,
  );
  console.log(
    `peak: the most runs streaming at once (first event to end); prompts go out ${REQUESTS_IN_FLIGHT} at a time ` +
      '(how long that took is on the lines below).',
  );
  console.log(
    'lost/reord: session-subscriber pairs whose seqs after the snapshot skip or step back, whose text_delta text ' +
      'is not the scripted reply, or whose seqs differ between the two apis (expected 0).',
  );
  for (const l of result.levels) {
    for (const example of l.violationExamples) console.log(`  ${l.sessions} sessions: ${example}`);
  }
  for (const [deployment, l] of labelled) {
    const cpu = Object.entries(l.cpuPct)
      .map(([name, pct]) => `${name} ${pct.toFixed(0)}%`)
      .join(', ');
    const commands = l.topCommands
      .map((c) => `${c.name} ${(c.calls / (l.runsCompleted * DELTAS)).toFixed(2)}`)
      .join(', ');
    const perEvent = l.topCommands
      .map((c) => `${c.name} ${(c.calls / l.publishedEvents).toFixed(2)}`)
      .join(', ');
    console.log(
      `${deployment}, ${l.sessions} sessions: prompts sent in ${formatTime(l.promptMs)}; machine CPU ` +
        `${l.machineCpuPct.toFixed(0)}% of ${cpus().length} cores; by process (% of one core): ${cpu}; ` +
        `text_delta frame ~${Math.round(l.deltaFrameBytes)} B; Redis calls per scripted delta: ${commands}; ` +
        `${l.publishedEvents.toLocaleString('en-US')} events of every type published, Redis commands per ` +
        `published event ${(l.redisCommands / l.publishedEvents).toFixed(2)} (${perEvent}).`,
    );
  }
  printBaselineReport(result);
  for (const p of result.profiles) {
    printTable(
      `CPU profile, ${p.deployment} ${p.process} (last scale's streaming phase; ${p.summary.busyPercent.toFixed(0)}% busy)`,
      ['function', 'share of busy'],
      p.summary.functions.map((f) => [f.name, `${f.percent.toFixed(1)}%`]),
      new Set([1]),
    );
    const level = (p.deployment === 'canopy' ? result.levels : result.baseline).at(-1);
    const deltas = level ? level.deltaEvents / APIS : 0;
    if (p.allocations) {
      printTable(
        `Allocations, ${p.deployment} ${p.process}: ${(p.allocations.totalBytes / 1048576).toFixed(0)} MiB over the phase ` +
          `(${(p.allocations.totalBytes / Math.max(1, deltas) / 1024).toFixed(1)} KiB per delta published)`,
        ['allocating function', 'share of bytes'],
        p.allocations.functions.map((f) => [f.name, `${f.percent.toFixed(1)}%`]),
        new Set([1]),
      );
    }
  }
  const top = result.levels.find((l) => l.sessions === TARGET_SESSIONS);
  const lossFree = result.levels.every((l) => l.violations === 0 && l.runsCompleted === l.sessions);
  if (result.levels.some((l) => l.benchSocketsCut > 0)) {
    console.log(
      "Targets: not judged: the bench's own client fell behind at some scale (INVALID in the table; see below).",
    );
  } else if (top) {
    console.log(
      `Target: p99 < ${TARGET_P99_MS} ms at ${TARGET_SESSIONS.toLocaleString('en-US')} sessions: ` +
        `${formatTime(top.p99Ms)}, ${top.p99Ms < TARGET_P99_MS ? 'PASS' : 'FAIL'}; no event lost or reordered ` +
        `and every run completed at every scale: ${lossFree ? 'PASS' : 'FAIL'}.`,
    );
  } else {
    console.log(
      `Target (p99 < ${TARGET_P99_MS} ms at ${TARGET_SESSIONS.toLocaleString('en-US')} sessions): not measured ` +
        `at these scales; no event lost or reordered: ${lossFree ? 'PASS' : 'FAIL'}.`,
    );
  }
}

/** The baseline relay's figures, Canopy's as ratios of them, event-loop delays, and the ratio targets. */
function printBaselineReport(result: ClusterBenchResult): void {
  if (result.baseline.length === 0) return;
  const published = (l: ClusterLevel) => l.deltaEvents / APIS;
  printTable(
    'Canopy against the baseline relay (same layout: 2 api + 2 worker processes, Redis)',
    [
      'sessions',
      'p50 canopy/base',
      'p99 canopy/base',
      'p99 steady',
      'cpu/event canopy/base',
      'redis cmds/published ev',
      'lost canopy/base',
    ],
    result.levels.map((c) => {
      const b = result.baseline.find((x) => x.sessions === c.sessions);
      if (!b) return [String(c.sessions), '-', '-', '-', '-', '-', '-'];
      // Latencies are whole milliseconds (the events' `at` is Date.now()): a baseline under 1 ms has no ratio.
      const ratio = (x: number, y: number, unit: (v: number) => string) =>
        y > 0 ? `${unit(x)}/${unit(y)} = ${(x / y).toFixed(2)}x` : `${unit(x)}/<1 ms (clock resolution)`;
      const ms = (v: number) => formatTime(v);
      const cpu = (v: number) => `${(v * 1000).toFixed(0)} µs`;
      return [
        c.sessions.toLocaleString('en-US'),
        ratio(c.p50Ms, b.p50Ms, ms),
        ratio(c.p99Ms, b.p99Ms, ms),
        ratio(c.steadyP99Ms, b.steadyP99Ms, ms),
        ratio(c.cpuMsPerEvent, b.cpuMsPerEvent, cpu),
        `${(c.redisCommands / published(c)).toFixed(2)} / ${(b.redisCommands / published(b)).toFixed(2)}`,
        `${c.violations}/${b.violations}`,
      ];
    }),
    new Set([0, 1, 2, 3, 4, 5, 6]),
  );
  console.log(
    'cpu/event: CPU time of the deployment (apis, workers, Redis, Postgres for Canopy) over the streaming phase ' +
      'per text_delta event delivered; redis cmds/published ev: Redis commands over the phase per delta event a ' +
      'worker published (each is delivered once per api).',
  );
  for (const [name, levels] of [
    ['canopy', result.levels],
    ['baseline', result.baseline],
  ] as const) {
    for (const l of levels) {
      const delays = Object.entries(l.loopDelay)
        .map(
          ([process, d]) =>
            `${process} ${formatTime(d.p99)} (max ${formatTime(d.max)}` +
            (d.gc
              ? `; gc ${d.gc.count} pauses, ${formatTime(d.gc.totalMs)} in all, longest ${formatTime(d.gc.maxMs)}, ` +
                `${d.gc.over5ms} of 5 ms or more: ` +
                Object.entries(d.gc.kinds ?? {})
                  .map(
                    ([kind, k]) =>
                      `${kind} ${k.count} for ${formatTime(k.totalMs)}, max ${formatTime(k.maxMs)}`,
                  )
                  .join(', ') +
                ')'
              : ')'),
        )
        .join(', ');
      console.log(`event-loop delay p99, ${name} at ${l.sessions} sessions: ${delays || 'not measured'}`);
    }
  }
  const top = result.levels.find((l) => l.sessions === TARGET_SESSIONS);
  const base = result.baseline.find((l) => l.sessions === TARGET_SESSIONS);
  for (const l of [...result.levels, ...result.baseline]) {
    if (l.benchSocketsCut > 0) {
      console.log(
        `INVALID at ${l.sessions.toLocaleString('en-US')} sessions: an api cut ${l.benchSocketsCut} of the bench's ` +
          'WebSocket connections as slow consumers (the bench itself read too slowly: an overloaded machine); the ' +
          "runs on them never completed, and this level's figures are not judged. Run it again on a quieter machine.",
      );
    }
  }
  if (top && base && (top.benchSocketsCut > 0 || base.benchSocketsCut > 0)) {
    console.log(`Targets at ${TARGET_SESSIONS.toLocaleString('en-US')} sessions: not judged (see above).`);
  } else if (top && base) {
    const p99 = top.p99Ms / base.p99Ms;
    const cpu = top.cpuMsPerEvent / base.cpuMsPerEvent;
    const ok = (v: boolean) => (v ? 'met' : 'NOT MET');
    console.log(
      `Targets at ${TARGET_SESSIONS.toLocaleString('en-US')} sessions: p99 <= 2x the baseline's: ${p99.toFixed(2)}x, ${ok(p99 <= 2)}; ` +
        `CPU per delivered event <= 2x: ${cpu.toFixed(2)}x, ${ok(cpu <= 2)}; ${redisPerEvent(top, ok)}; ` +
        `nothing lost or reordered: ${ok(top.violations === 0 && top.runsCompleted === top.sessions)}.`,
    );
  }
  for (const l of result.levels) {
    if (l.sessions !== TARGET_SESSIONS)
      console.log(`At ${l.sessions.toLocaleString('en-US')} sessions: ${redisPerEvent(l)}.`);
  }
  const parts = (l: ClusterLevel) => cpuPerEventByPart(l.cpuPct, l.cpuMsPerEvent);
  for (const c of result.levels) {
    const b = result.baseline.find((x) => x.sessions === c.sessions);
    if (!b) continue;
    console.log(
      `CPU per delivered event by part at ${c.sessions.toLocaleString('en-US')} sessions (µs): ` +
        `${describeCpuByPart(parts(c), parts(b))}.`,
    );
  }
}

/**
 * Redis commands per published event, of the event bus alone (judged) and of everything (printed): the rest is
 * work per run (the live registry's writes, timers, BullMQ, rate limits), shown per run, not per event.
 */
function redisPerEvent(l: ClusterLevel, ok?: (v: boolean) => string): string {
  const bus = l.busCommands / l.publishedEvents;
  const all = l.redisCommands / l.publishedEvents;
  const runs = Math.max(1, l.runsCompleted);
  const otherPerRun = (l.redisCommands - l.busCommands) / runs;
  return (
    `Redis commands per published event${ok ? ' <= 2' : ''}: event bus ${bus.toFixed(3)}${ok ? `, ${ok(bus <= 2)}` : ''} ` +
    `(all commands ${all.toFixed(2)}: the other ${otherPerRun.toFixed(0)} per run are the registry, timers, ` +
    `BullMQ (${(l.queueEventAppends / runs).toFixed(1)} XADDs to its event streams), rate limits and ` +
    `${(l.otherPublishes / runs).toFixed(1)} PUBLISHes of the activity feed and run control)`
  );
}

function verdict(l: ClusterLevel): string | undefined {
  if (l.benchSocketsCut > 0) return 'INVALID';
  if (l.sessions !== TARGET_SESSIONS) return undefined;
  const ok = l.p99Ms < TARGET_P99_MS && l.violations === 0 && l.runsCompleted === l.sessions;
  return ok ? 'PASS' : 'FAIL';
}

// One scale

/** What a scale is measured on: Canopy's Cluster, or the baseline relay. */
interface Deployment {
  readonly processes: Map<string, { proc: ChildProcess }>;
  readonly adminKey: string;
  api(i: number): string;
}

async function measureScale(
  cluster: Deployment,
  stats: Redis,
  sessions: number,
  probe: LoopDelayProbe,
  notBus: { channels: string[]; queueEvents: string } | null = null,
): Promise<ClusterLevel> {
  const apiUrls = Array.from({ length: APIS }, (_, i) => cluster.api(i + 1));
  const key = await newTenant(apiUrls[0]!, cluster.adminKey, `bench-${sessions}-${++tenantsMade}`);
  const ids = await inBatches(sessions, (i) =>
    request<{ id: string }>(apiUrls[i % APIS]!, key, 'POST', '/v1/sessions', {
      model: 'mock:script',
      title: `bench ${i}`,
      opts: { script: [{ text: REPLY, delayMs: DELTA_MS }] },
    }).then((s) => s.id),
  );

  const tracks = new Map<string, Track[]>(ids.map((id) => [id, []]));
  const sockets: BenchSocket[] = [];
  const latencies = new LatencyLog(sessions * DELTAS * APIS);
  try {
    const socketsPerApi = Math.ceil(sessions / SESSIONS_PER_SOCKET);
    for (const url of apiUrls) {
      for (let s = 0; s < socketsPerApi; s++) sockets.push(await BenchSocket.connect(url, key, latencies));
    }
    // Session i on socket (i mod socketsPerApi) of every api.
    await inBatches(ids.length * APIS, async (j) => {
      const sessionIndex = Math.floor(j / APIS);
      const api = j % APIS;
      const socket = sockets[api * socketsPerApi + (sessionIndex % socketsPerApi)]!;
      const track = new Track(`api-${api + 1}`);
      tracks.get(ids[sessionIndex]!)!.push(track);
      await socket.subscribe(ids[sessionIndex]!, track);
    });
    await waitFor(() => [...tracks.values()].every((ts) => ts.every((t) => t.snapshotSeq !== null)), 30_000);

    const otherPublishes = await PublishCounter.start(stats, notBus?.channels ?? []);
    const queueEventsBefore = notBus ? await streamEntriesAdded(stats, notBus.queueEvents) : 0;
    const cpu = await CpuMeter.start(cluster, stats);
    probe.reset();
    const commandsBefore = await commandStats(stats);
    const started = performance.now();
    latencies.open = true;
    await inBatches(ids.length, (i) =>
      request(apiUrls[i % APIS]!, key, 'POST', `/v1/sessions/${ids[i]}/prompt`, { content: 'go' }),
    );
    const promptMs = performance.now() - started;
    latencies.markSteady();
    const allDone = () => [...tracks.values()].every((ts) => ts.every((t) => t.done));
    // Runs end ~10 s after they start; an overloaded machine stretches that, so the deadline is generous.
    await waitFor(allDone, (DELTAS * DELTA_MS + 120_000) * Math.max(1, sessions / 1_000)).catch(
      () => undefined,
    );
    const lastEnd = Math.max(...[...tracks.values()].flat().map((t) => t.doneAt ?? performance.now()));
    const wallMs = lastEnd - started;
    const commandsAfter = await commandStats(stats);
    const notBusPublishes = await otherPublishes.stop();
    const queueEventAppends = notBus
      ? (await streamEntriesAdded(stats, notBus.queueEvents)) - queueEventsBefore
      : 0;
    const { byProcess: cpuPct, machine: machineCpuPct, elapsedMs: cpuMs } = await cpu.stop();
    const loopDelay = probe.read(cluster);
    latencies.open = false;

    const { violations, examples } = checkTracks(tracks);
    const all = [...tracks.values()].flat();
    const sorted = latencies.sorted();
    return {
      sessions,
      runsCompleted: [...tracks.values()].filter((ts) => ts.every((t) => t.done)).length,
      peakStreaming: peakOverlap([...tracks.values()].map((ts) => ts[0]!)),
      wallMs,
      deltaEvents: sum(all.map((t) => t.deltaEvents)),
      publishedEvents: sum([...tracks.values()].map((ts) => ts[0]?.events ?? 0)),
      originalDeltas: sum(all.map((t) => t.originalDeltas)),
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
      maxMs: sorted.length > 0 ? sorted[sorted.length - 1]! : Number.NaN,
      steadyP99Ms: percentile(latencies.sorted('steady'), 99),
      deltaFrameBytes: sum(all.map((t) => t.deltaBytes)) / Math.max(1, sum(all.map((t) => t.deltaEvents))),
      redisCommands: commandsAfter.total - commandsBefore.total,
      busCommands:
        sum(
          BUS_COMMANDS.map(
            (name) => (commandsAfter.calls.get(name) ?? 0) - (commandsBefore.calls.get(name) ?? 0),
          ),
        ) -
        notBusPublishes -
        queueEventAppends,
      otherPublishes: notBusPublishes,
      queueEventAppends,
      topCommands: [...commandsAfter.calls]
        .map(([name, calls]) => ({ name, calls: calls - (commandsBefore.calls.get(name) ?? 0) }))
        .sort((a, b) => b.calls - a.calls)
        .slice(0, 8),
      promptMs,
      violations,
      benchSocketsCut: sockets.filter((socket) => socket.cut).length,
      violationExamples: examples,
      cpuPct,
      machineCpuPct,
      cpuMsPerEvent:
        (sum(Object.entries(cpuPct).map(([name, pct]) => (inDeployment(name) ? pct : 0))) / 100) *
        (cpuMs / Math.max(1, sum(all.map((t) => t.deltaEvents)))),
      loopDelay,
    };
  } finally {
    await Promise.all(sockets.map((s) => s.close()));
  }
}

/** Violations per session-subscriber pair, and whether the two apis delivered the same seqs. */
function checkTracks(tracks: Map<string, Track[]>): { violations: number; examples: string[] } {
  let violations = 0;
  const examples: string[] = [];
  const note = (message: string) => {
    violations++;
    if (examples.length < 5) examples.push(message);
  };
  for (const [id, ts] of tracks) {
    for (const t of ts) {
      if (t.problems.length > 0) note(`${id} on ${t.api}: ${t.problems.slice(0, 3).join('; ')}`);
      else if (t.done && t.text !== REPLY)
        note(`${id} on ${t.api}: text of ${t.text.length} chars, not the scripted ${REPLY.length}`);
    }
    const [a, b] = ts;
    if (a?.done && b?.done && (a.firstSeq !== b.firstSeq || a.lastSeq !== b.lastSeq)) {
      note(`${id}: ${a.api} got seqs ${a.firstSeq}..${a.lastSeq}, ${b.api} got ${b.firstSeq}..${b.lastSeq}`);
    }
  }
  return { violations, examples };
}

// Subscribers

/** One session as one subscriber saw it. */
class Track {
  snapshotSeq: number | null = null;
  /** When the run's first event arrived (performance.now). */
  startedAt: number | null = null;
  firstSeq: number | null = null;
  lastSeq: number | null = null;
  text = '';
  deltaEvents = 0;
  /** Events of any type after the snapshot. */
  events = 0;
  originalDeltas = 0;
  deltaBytes = 0;
  finalTurn = false;
  done = false;
  doneAt: number | null = null;
  readonly problems: string[] = [];

  constructor(readonly api: string) {}

  onEvent(frame: EventFrame, bytes: number): void {
    if (frame.event === 'snapshot') {
      if (this.snapshotSeq !== null) this.problems.push('a second snapshot');
      this.snapshotSeq = frame.seq;
      return;
    }
    if (this.snapshotSeq === null) this.problems.push(`${frame.event} #${frame.seq} before the snapshot`);
    if (this.lastSeq === null) {
      // Subscribed before the prompt: the run's first event (its `status`) is the first after the snapshot, and
      // follows the snapshot's seq directly unless the session had no seq yet (a fresh sequence starts at the
      // publisher's clock).
      this.firstSeq = frame.seq;
      this.startedAt = performance.now();
      if (frame.event !== 'status')
        this.problems.push(`first event ${frame.event} #${frame.seq}, not status`);
      if (this.snapshotSeq && frame.seq !== this.snapshotSeq + 1) {
        this.problems.push(`first event #${frame.seq} after snapshot #${this.snapshotSeq}`);
      }
    } else if (frame.seq !== this.lastSeq + 1) {
      this.problems.push(`${frame.event} #${frame.seq} after #${this.lastSeq}`);
    }
    this.lastSeq = frame.seq;
    this.events++;
    const data = frame.data as Record<string, unknown>;
    switch (frame.event) {
      case 'text_delta': {
        const delta = String(data.delta);
        this.text += delta;
        this.deltaEvents++;
        this.originalDeltas += delta.match(/\S+/g)?.length ?? 0;
        this.deltaBytes += bytes;
        break;
      }
      case 'turn':
        this.finalTurn = data.stop === 'stop';
        break;
      case 'store':
        if (this.finalTurn && data.kind === 'tree') {
          if (data.ok !== true) this.problems.push(`commit failed: ${String(data.error)}`);
          this.markDone();
        }
        break;
      case 'error':
      case 'cancelled':
        this.problems.push(`${frame.event}: ${JSON.stringify(data).slice(0, 200)}`);
        this.markDone();
        break;
    }
  }

  private markDone(): void {
    if (this.done) return;
    this.done = true;
    this.doneAt = performance.now();
  }
}

interface EventFrame {
  type: 'event';
  sessionId: string;
  seq: number;
  event: string;
  data: unknown;
  at: number;
}

type Frame =
  | EventFrame
  | { type: 'reply'; ref?: string; ok: boolean; error?: { code: string; message: string } }
  | { type: 'end'; sessionId: string; reason: string }
  | { type: 'error'; error: { code: string; message: string } };

/** Emit -> receipt latencies of text_delta events, in ms, while open. */
class LatencyLog {
  open = false;
  private values: Float64Array;
  private length = 0;
  /** Where the steady phase (every prompt answered) starts in `values`. */
  private steadyFrom = 0;

  constructor(capacity: number) {
    this.values = new Float64Array(Math.max(16, capacity));
  }

  add(ms: number): void {
    if (!this.open) return;
    if (this.length === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.length++] = ms;
  }

  markSteady(): void {
    this.steadyFrom = this.length;
  }

  sorted(phase: 'all' | 'steady' = 'all'): Float64Array {
    return this.values.slice(phase === 'steady' ? this.steadyFrom : 0, this.length).sort();
  }
}

/** A WebSocket connection to /v1/ws multiplexing many sessions; events go to their session's Track. */
class BenchSocket {
  /** The api cut this connection as a slow consumer. */
  cut = false;
  private nextRef = 1;
  private readonly replies = new Map<string, { resolve: () => void; reject: (err: Error) => void }>();
  private readonly tracks = new Map<string, Track>();

  private constructor(
    private readonly socket: WebSocket,
    latencies: LatencyLog,
  ) {
    socket.on('message', (raw: WebSocket.RawData) => {
      const receivedAt = Date.now();
      const bytes = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
      const text = bytes.toString('utf8');
      const frame = JSON.parse(text) as Frame;
      if (frame.type === 'event') {
        if (frame.event === 'text_delta') latencies.add(receivedAt - frame.at);
        this.tracks.get(frame.sessionId)?.onEvent(frame, bytes.length);
      } else if (frame.type === 'reply' && frame.ref !== undefined) {
        const waiter = this.replies.get(frame.ref);
        this.replies.delete(frame.ref);
        if (frame.ok) waiter?.resolve();
        else waiter?.reject(new Error(`${frame.error?.code}: ${frame.error?.message}`));
      } else if (frame.type === 'end') {
        this.tracks.get(frame.sessionId)?.problems.push(`subscription ended: ${frame.reason}`);
      } else if (frame.type === 'error') {
        if (frame.error.code === 'slow_consumer') this.cut = true;
        console.error(`websocket error frame: ${frame.error.code}: ${frame.error.message}`);
      }
    });
  }

  static connect(apiUrl: string, key: string, latencies: LatencyLog): Promise<BenchSocket> {
    const url = new URL('/v1/ws', apiUrl.replace(/^http/, 'ws'));
    url.searchParams.set('token', key);
    const socket = new WebSocket(url, { perMessageDeflate: false });
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(new BenchSocket(socket, latencies)));
      socket.once('error', reject);
    });
  }

  subscribe(sessionId: string, track: Track): Promise<void> {
    this.tracks.set(sessionId, track);
    const ref = `s${this.nextRef++}`;
    return new Promise((resolve, reject) => {
      this.replies.set(ref, { resolve, reject });
      this.socket.send(JSON.stringify({ op: 'subscribe', ref, sessionId }));
    });
  }

  close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.close(1000, 'bench done');
    });
  }
}

// The raw limit

/**
 * PUBLISH in pipelines of 500 (up to 4 in flight) to a channel one other connection subscribes to, for RAW_MS;
 * the rate is the messages that subscriber received per second. The payload has the shape and size of what a
 * worker publishes for one delta event: `<seq>\n[{"type":"text_delta","data":{...},"at":...}]`.
 */
async function rawPublishRate(
  url: string,
  channel: string,
): Promise<{ perSec: number; payloadBytes: number }> {
  const event = {
    type: 'text_delta',
    data: { runId: '6f1c2a9e-3b7d-4c55-9a0e-2d8f4b7c1e90', index: 0, delta: ' word123' },
    at: Date.now(),
  };
  const payload = `${Date.now() * 1000}\n[${JSON.stringify(event)}]`;
  const publisher = new Redis(url);
  const subscriber = new Redis(url);
  let received = 0;
  subscriber.on('messageBuffer', () => received++);
  try {
    await subscriber.subscribe(channel);
    const inFlight: Promise<unknown>[] = [];
    const started = performance.now();
    const end = started + RAW_MS;
    let counted = 0;
    let countedAt = started;
    const from = received;
    while (performance.now() < end) {
      const pipeline = publisher.pipeline();
      for (let i = 0; i < 500; i++) pipeline.publish(channel, payload);
      inFlight.push(pipeline.exec());
      if (inFlight.length >= 4) await inFlight.shift();
      counted = received - from;
      countedAt = performance.now();
    }
    await Promise.all(inFlight);
    return { perSec: counted / ((countedAt - started) / 1000), payloadBytes: Buffer.byteLength(payload) };
  } finally {
    publisher.disconnect();
    subscriber.disconnect();
  }
}

// CPU

/** CPU time of the cluster's processes (Linux /proc), Redis (INFO cpu) and this process over a phase. */
class CpuMeter {
  private constructor(
    private readonly stats: Redis,
    private readonly pids: Map<string, number>,
    private readonly ticksFrom: Map<string, number>,
    private readonly redisFrom: number,
    private readonly benchFrom: NodeJS.CpuUsage,
    private readonly machineFrom: MachineTicks | null,
    private readonly postgres: PostgresCpu,
    private readonly startedAt: number,
  ) {}

  static async start(cluster: Deployment, stats: Redis): Promise<CpuMeter> {
    const pids = new Map<string, number>();
    const ticks = new Map<string, number>();
    for (const [name, p] of cluster.processes) {
      const from = p.proc.pid === undefined ? null : procTicks(p.proc.pid);
      if (from === null) continue;
      pids.set(name, p.proc.pid!);
      ticks.set(name, from);
    }
    const redisFrom = await redisCpuSeconds(stats);
    return new CpuMeter(
      stats,
      pids,
      ticks,
      redisFrom,
      process.cpuUsage(),
      machineTicks(),
      PostgresCpu.start(),
      performance.now(),
    );
  }

  /** CPU over the phase: by process name, then `redis` and `bench`, in % of one core; the machine's busy share. */
  async stop(): Promise<{ byProcess: Record<string, number>; machine: number; elapsedMs: number }> {
    const redisTo = await redisCpuSeconds(this.stats);
    const machineTo = machineTicks();
    const elapsedMs = performance.now() - this.startedAt;
    const pct = (ms: number) => (ms / elapsedMs) * 100;
    const result: Record<string, number> = {};
    for (const [name, pid] of this.pids) {
      const to = procTicks(pid);
      if (to !== null) result[name] = pct(((to - this.ticksFrom.get(name)!) / CLOCK_TICKS) * 1000);
    }
    result.redis = pct((redisTo - this.redisFrom) * 1000);
    const { user, system } = process.cpuUsage(this.benchFrom);
    result.bench = pct((user + system) / 1000);
    const postgres = this.postgres.stop();
    if (postgres !== null) result.postgres = pct((postgres / CLOCK_TICKS) * 1000);
    const machine =
      this.machineFrom && machineTo
        ? ((machineTo.busy - this.machineFrom.busy) / (machineTo.total - this.machineFrom.total)) * 100
        : Number.NaN;
    // Everything else busy on the machine (other programs, the kernel), in the same unit.
    const measured = Object.values(result).reduce((a, b) => a + b, 0);
    if (Number.isFinite(machine)) result.other = Math.max(0, machine * cpus().length - measured);
    return { byProcess: result, machine, elapsedMs };
  }
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of a process in clock ticks; null where /proc is not there. */
function procTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

async function redisCpuSeconds(stats: Redis): Promise<number> {
  const info = await stats.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return field('used_cpu_sys') + field('used_cpu_user');
}

/**
 * The CPU of Postgres's processes over a phase, backends opened and closed during it included: the pools open
 * connections as the load grows and close idle ones, and a backend's first statements (its caches cold) cost the most.
 * Sampled every POSTGRES_SAMPLE_MS: a backend that exits between two samples loses at most that much of its CPU.
 * Counting only the backends that lived through the phase had put the others' CPU under `other` (one run at 1,000
 * sessions: postgres 6% and other 36% of a core; counted since, 31-37% and 4-5%).
 */
class PostgresCpu {
  /** Per pid: ticks when first seen (0 for a process that started during the phase) and when last seen. */
  private readonly seen = new Map<number, { from: number; last: number }>();
  private readonly timer: NodeJS.Timeout;

  private constructor() {
    for (const [pid, ticks] of postgresTicks()) this.seen.set(pid, { from: ticks, last: ticks });
    this.timer = setInterval(() => this.sample(), POSTGRES_SAMPLE_MS);
    this.timer.unref();
  }

  static start(): PostgresCpu {
    return new PostgresCpu();
  }

  /** Ticks over the phase, or null where /proc shows no Postgres process. */
  stop(): number | null {
    clearInterval(this.timer);
    this.sample();
    if (this.seen.size === 0) return null;
    let ticks = 0;
    for (const { from, last } of this.seen.values()) ticks += last - from;
    return ticks;
  }

  private sample(): void {
    for (const [pid, ticks] of postgresTicks()) {
      const known = this.seen.get(pid);
      if (known) known.last = ticks;
      else this.seen.set(pid, { from: 0, last: ticks });
    }
  }
}

const POSTGRES_SAMPLE_MS = 250;

/** CPU ticks of every process named postgres, by pid (empty where /proc is not there). */
function postgresTicks(): Map<number, number> {
  const ticks = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return ticks;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue;
    }
    const t = procTicks(Number(entry));
    if (t !== null) ticks.set(Number(entry), t);
  }
  return ticks;
}

interface MachineTicks {
  busy: number;
  total: number;
}

/** The machine's CPU time over all cores since boot (/proc/stat), busy and total; null where it is not there. */
function machineTicks(): MachineTicks | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const values = line.trim().split(/\s+/).slice(1).map(Number);
    const total = values.slice(0, 8).reduce((a, b) => a + b, 0);
    // idle and iowait are the 4th and 5th fields
    return { busy: total - values[3]! - values[4]!, total };
  } catch {
    return null;
  }
}

/** The event bus's commands on a publish (redis-event-bus.ts): the log's append, the delivery, the log's TTL. */
const BUS_COMMANDS = ['xadd', 'publish', 'spublish', 'expire'] as const;

/**
 * Counts the messages published on some channel patterns while it runs: its own connection, PSUBSCRIBEd before the
 * phase starts (one more subscriber for those channels only: the activity feed and run control, a few per run).
 */
class PublishCounter {
  private count = 0;

  private constructor(private readonly subscriber: Redis | null) {
    subscriber?.on('pmessage', () => {
      this.count++;
    });
  }

  static async start(redis: Redis, patterns: string[]): Promise<PublishCounter> {
    if (patterns.length === 0) return new PublishCounter(null);
    const subscriber = redis.duplicate();
    await subscriber.psubscribe(...patterns);
    return new PublishCounter(subscriber);
  }

  /** The messages counted; closes the connection. */
  async stop(): Promise<number> {
    if (this.subscriber) {
      await this.subscriber.punsubscribe().catch(() => undefined);
      this.subscriber.disconnect();
    }
    return this.count;
  }
}

/** Entries ever added to the streams whose keys match a pattern (XINFO STREAM entries-added, Redis 7). */
async function streamEntriesAdded(redis: Redis, pattern: string): Promise<number> {
  let total = 0;
  for await (const keys of redis.scanStream({ match: pattern, type: 'stream', count: 1_000 })) {
    for (const key of keys as string[]) {
      const info = (await redis.xinfo('STREAM', key)) as unknown[];
      const at = info.indexOf('entries-added');
      total += at >= 0 ? Number(info[at + 1]) : 0;
    }
  }
  return total;
}

/** Redis's total_commands_processed and the calls per command (INFO commandstats). */
async function commandStats(stats: Redis): Promise<{ total: number; calls: Map<string, number> }> {
  const [general, commands] = await Promise.all([stats.info('stats'), stats.info('commandstats')]);
  const calls = new Map<string, number>();
  for (const match of commands.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    calls.set(match[1]!, Number(match[2]));
  return { total: Number(/^total_commands_processed:(\d+)/m.exec(general)?.[1] ?? Number.NaN), calls };
}

// The baseline relay

const RELAY_DIR = resolve(__dirname, 'relay');
/** Whether a process's CPU is the deployment's (its apis, workers, Redis, Postgres; not the bench's, not the rest). */
const inDeployment = (name: string) => DEPLOYMENT_PARTS.some((p) => p.process.test(name));

/** bench/relay's processes in Canopy's layout: APIS relay apis and WORKERS relay workers on one Redis. */
class RelayDeployment {
  readonly processes = new Map<string, { proc: ChildProcess; url: string | null; output: string[] }>();
  readonly adminKey = 'relay';
  private readonly prefix = `relay${Math.random().toString(36).slice(2, 8)}`;

  constructor(
    private readonly redisUrl: string,
    private readonly probeEnv: Record<string, string>,
  ) {}

  api(i: number): string {
    const url = this.processes.get(`api-${i}`)?.url;
    if (!url) throw new Error(`relay api-${i} is not running`);
    return url;
  }

  async start(): Promise<void> {
    for (let i = 1; i <= WORKERS; i++) {
      this.spawn(`worker-${i}`, 'relay-worker.mjs', { RELAY_INDEX: String(i - 1) }, null);
    }
    for (let i = 1; i <= APIS; i++) {
      const port = await freePort();
      this.spawn(`api-${i}`, 'relay-api.mjs', { PORT: String(port) }, `http://127.0.0.1:${port}`);
    }
    await waitFor(
      () => [...this.processes.values()].every((p) => /listening|ready/.test(p.output.join(''))),
      30_000,
    );
  }

  async stop(): Promise<void> {
    await Promise.all(
      [...this.processes.values()].map(async ({ proc }) => {
        if (proc.exitCode !== null) return;
        proc.kill('SIGTERM');
        await new Promise((r) => proc.once('exit', r));
      }),
    );
    this.processes.clear();
  }

  private spawn(name: string, file: string, env: Record<string, string>, url: string | null): void {
    const proc = spawn(process.execPath, [join(RELAY_DIR, file)], {
      env: {
        PATH: process.env.PATH ?? '',
        REDIS_URL: this.redisUrl,
        RELAY_PREFIX: this.prefix,
        RELAY_WORKERS: String(WORKERS),
        RELAY_DELTAS: String(DELTAS),
        RELAY_DELTA_MS: String(DELTA_MS),
        ...this.probeEnv,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    proc.stdout?.on('data', (d: Buffer) => output.push(d.toString()));
    proc.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
    this.processes.set(name, { proc, url, output });
  }
}

/** Each process's pid by name (the deployments forget them once stopped). */
function pidsOf(deployment: Deployment): Map<string, number> {
  const pids = new Map<string, number>();
  for (const [name, { proc }] of deployment.processes) if (proc.pid !== undefined) pids.set(name, proc.pid);
  return pids;
}

/** The event-loop delay probe's directory: processes write their figures there, the bench resets and reads them. */
class LoopDelayProbe {
  private constructor(
    readonly dir: string,
    private readonly profile: boolean,
  ) {}

  static create(profile: boolean): LoopDelayProbe {
    return new LoopDelayProbe(mkdtempSync(join(tmpdir(), 'canopy-loop-delay-')), profile);
  }

  /** What a process needs in its environment to carry the probe. */
  get env(): Record<string, string> {
    return {
      NODE_OPTIONS: `--require ${join(RELAY_DIR, 'loop-delay.cjs')}`,
      CANOPY_BENCH_PROBE_DIR: this.dir,
      ...(this.profile ? { CANOPY_BENCH_CPU_PROFILE: '1' } : {}),
    };
  }

  /** The CPU profiles the stopped processes wrote (from the last reset to their exit), summarised. */
  profiles(deployment: 'canopy' | 'baseline', pids: Map<string, number>): ClusterBenchResult['profiles'] {
    const found: ClusterBenchResult['profiles'] = [];
    for (const [name, pid] of pids) {
      try {
        let allocations: AllocationSummary | null = null;
        try {
          allocations = summariseHeapProfile(join(this.dir, `${pid}.heapprofile`));
        } catch {
          // no allocation profile
        }
        found.push({
          deployment,
          process: name,
          summary: summariseCpuProfile(join(this.dir, `${pid}.cpuprofile`), 0, 12),
          allocations,
        });
        this.keep(`${pid}.cpuprofile`, `${deployment}-${name}.cpuprofile`);
        this.keep(`${pid}.heapprofile`, `${deployment}-${name}.heapprofile`);
      } catch {
        // no profile: the process died without its exit handler
      }
    }
    return found;
  }

  /**
   * Copies a profile to CANOPY_BENCH_PROFILE_DIR when set (for Chrome DevTools or speedscope), under the process's
   * name.
   */
  private keep(file: string, as: string): void {
    const into = process.env.CANOPY_BENCH_PROFILE_DIR;
    if (!into) return;
    try {
      mkdirSync(into, { recursive: true });
      copyFileSync(join(this.dir, file), join(into, as));
    } catch {
      // not written (no allocation profile)
    }
  }

  /** Starts a new histogram in every process (within the probe's half-second tick). */
  reset(): void {
    writeFileSync(join(this.dir, 'reset'), String(Date.now()));
  }

  /** Each process's figures since the last reset. */
  read(deployment: Deployment): ClusterLevel['loopDelay'] {
    const result: ClusterLevel['loopDelay'] = {};
    for (const [name, { proc }] of deployment.processes) {
      try {
        const figures = JSON.parse(readFileSync(join(this.dir, `${proc.pid}.json`), 'utf8')) as {
          p99: number;
          max: number;
          gc?: ClusterGc;
        };
        result[name] = { p99: figures.p99, max: figures.max, gc: figures.gc ?? null };
      } catch {
        // the process wrote nothing (it died, or the probe is off)
      }
    }
    return result;
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// HTTP

/** Tenants made so far: each scale measured (a warm-up, a scale given twice) gets one of its own. */
let tenantsMade = 0;

async function newTenant(apiUrl: string, adminKey: string, name: string): Promise<string> {
  const tenant = await request<{ apiKey: string }>(apiUrl, adminKey, 'POST', '/v1/admin/tenants', { name });
  return tenant.apiKey;
}

async function request<T = unknown>(
  apiUrl: string,
  credential: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

// Helpers

/** Runs fn(0..count-1) with at most REQUESTS_IN_FLIGHT at once; results in index order. */
async function inBatches<T>(count: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(REQUESTS_IN_FLIGHT, count) }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await fn(i);
      }
    }),
  );
  return results;
}

/** Resolves once the condition holds; rejects after the deadline. Polls every 20 ms. */
async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The most tracks between their first event and their end at one moment. */
function peakOverlap(tracks: readonly Track[]): number {
  const edges: Array<[number, number]> = [];
  for (const t of tracks) {
    if (t.startedAt === null) continue;
    edges.push([t.startedAt, 1], [t.doneAt ?? Number.POSITIVE_INFINITY, -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let peak = 0;
  for (const [, step] of edges) peak = Math.max(peak, (now += step));
  return peak;
}

/** Nearest-rank percentile of sorted values; NaN when there are none. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
