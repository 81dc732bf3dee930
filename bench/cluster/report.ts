// The cluster bench's report: a row per deployment and scale, the figures behind them (CPU by process, Redis calls,
// event-loop delays, profiles), Canopy as ratios of the baseline relay, and the verdicts on the targets: at the
// judged scale (1,000 sessions, else the largest run), p99 and CPU per delivered event at most twice the relay's,
// the event bus's Redis commands per published event at most 2, nothing lost or reordered.

import { cpus } from 'node:os';

import { formatTime, judge, notJudged, printTable, ratio, type Verdict } from '../lib/report';
import { cpuPerEventByPart, describeCpuByPart } from './cpu-parts';
import { RAW_MS } from './raw-publish';
import {
  APIS,
  DELTAS,
  DELTA_MS,
  REQUESTS_IN_FLIGHT,
  SESSIONS_PER_SOCKET,
  WORKERS,
  type ClusterBenchResult,
  type ClusterLevel,
} from './scenario';

/** The scale the targets are judged at when it was run; else the largest scale run. */
const TARGET_SESSIONS = 1_000;

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
    'valid',
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
      l.benchSocketsCut > 0 ? 'INVALID' : 'ok',
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
  for (const l of [...result.levels, ...result.baseline]) {
    if (l.benchSocketsCut > 0) {
      console.log(
        `INVALID at ${l.sessions.toLocaleString('en-US')} sessions: an api cut ${l.benchSocketsCut} of the bench's ` +
          'WebSocket connections as slow consumers (the bench itself read too slowly: an overloaded machine); the ' +
          "runs on them never completed, and this level's figures are not judged. Run it again on a quieter machine.",
      );
    }
  }
  for (const l of result.levels)
    console.log(`At ${l.sessions.toLocaleString('en-US')} sessions: ${redisPerEvent(l)}.`);
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
function redisPerEvent(l: ClusterLevel): string {
  const all = l.redisCommands / l.publishedEvents;
  const runs = Math.max(1, l.runsCompleted);
  const otherPerRun = (l.redisCommands - l.busCommands) / runs;
  return (
    `Redis commands per published event: event bus ${(l.busCommands / l.publishedEvents).toFixed(3)} ` +
    `(all commands ${all.toFixed(2)}: the other ${otherPerRun.toFixed(0)} per run are the registry, timers, ` +
    `BullMQ (${(l.queueEventAppends / runs).toFixed(1)} XADDs to its event streams), rate limits and ` +
    `${(l.otherPublishes / runs).toFixed(1)} PUBLISHes of the activity feed and run control)`
  );
}

/** The level the targets are judged at: TARGET_SESSIONS when it was run, else the largest scale run. */
function judgedLevel(levels: readonly ClusterLevel[]): ClusterLevel | undefined {
  return (
    levels.find((l) => l.sessions === TARGET_SESSIONS) ??
    [...levels].sort((a, b) => b.sessions - a.sessions)[0]
  );
}

/**
 * The targets at the judged scale, each a ratio of Canopy's figure to the relay's in the same run or a count. A level
 * where an api cut the bench's own connections (the bench fell behind) is not judged.
 */
export function clusterVerdicts(result: ClusterBenchResult): Verdict[] {
  const section = 'cluster';
  const c = judgedLevel(result.levels);
  if (!c) return [];
  const b = result.baseline.find((l) => l.sessions === c.sessions);
  const at = `at ${c.sessions.toLocaleString('en-US')} sessions`;
  const targets = [
    `p99 publish->receipt <= 2x the relay's ${at}`,
    `CPU per delivered event <= 2x the relay's ${at}`,
    `event bus Redis commands per published event <= 2 ${at}`,
    `sessions with events lost or reordered, or runs not completed = 0 ${at}`,
  ];
  if (c.benchSocketsCut > 0 || (b?.benchSocketsCut ?? 0) > 0) {
    return targets.map((t) => notJudged(section, t, "the bench's own client fell behind"));
  }
  const ms = (v: number) => formatTime(v);
  return [
    b
      ? judge(section, targets[0]!, {
          value: c.p99Ms / b.p99Ms,
          limit: 2,
          kind: 'max',
          format: ratio,
          spread:
            `p50/p99 canopy ${ms(c.p50Ms)}/${ms(c.p99Ms)}, relay ${ms(b.p50Ms)}/${ms(b.p99Ms)}; ` +
            `steady p99 ${ratio(c.steadyP99Ms / b.steadyP99Ms)}`,
        })
      : notJudged(section, targets[0]!, 'no relay run'),
    b
      ? judge(section, targets[1]!, {
          value: c.cpuMsPerEvent / b.cpuMsPerEvent,
          limit: 2,
          kind: 'max',
          format: ratio,
          spread: `${(c.cpuMsPerEvent * 1000).toFixed(0)} / ${(b.cpuMsPerEvent * 1000).toFixed(0)} µs`,
        })
      : notJudged(section, targets[1]!, 'no relay run'),
    judge(section, targets[2]!, {
      value: c.busCommands / c.publishedEvents,
      limit: 2,
      kind: 'max',
      format: (v) => v.toFixed(3),
      spread: `all commands ${(c.redisCommands / c.publishedEvents).toFixed(2)} per published event`,
    }),
    judge(section, targets[3]!, {
      value: c.violations + (c.sessions - c.runsCompleted),
      limit: 0,
      kind: 'max',
      format: String,
      spread: `${c.runsCompleted}/${c.sessions} runs completed`,
    }),
  ];
}
