// `npm run bench`: runs the benchmark sections and prints each one's tables, then one table of every target's
// verdict (a ratio measured in the same run, or a count; never an absolute time). Arguments pick sections by name
// (`npm run bench -- cluster`) and run them at their full scales; none runs every section but the soak at quick
// scales (smaller loads, shorter windows, the same targets) in under five minutes on a 2-core machine.
//   engine   the session engine on the machine's Postgres: runs/s and latency at 1/10/100 sessions, as a share of
//            the raw Postgres limit for a commit-shaped transaction (--engine-levels, --engine-measure-ms)
//   http     the api process as deployed (embedded PGlite, and the machine's Postgres), driven over HTTP by a load
//            generator process: runs/s, latency, CPU, memory and database work per run at 1/10/100 sessions, as a
//            share of the in-process engine (--http-modes, --http-levels, --http-runtimes, --http-measure-ms,
//            --http-history, --http-profile=DIR, --http-pool=N)
//   long     a run's cost as its conversation grows: rows fetched, database time and wait p50 of a run of a
//            10,000-message session against a 10-message one on an 8,000-token window, as ratios (target <= 1.5x)
//            (--long-messages, --long-runs, --long-rounds). Only when named.
//   live     a live session's cost as its conversation grows: the api's heap per live session (after GC, K sessions
//            open with an SSE subscriber each) and its snapshot's bytes, a 10,000-message session against a
//            10-message one (target <= 2x each) (--live-messages, --live-sessions, --live-rounds, --live-path-nodes)
//   cluster  2 api + 2 worker processes on the machine's Postgres and Redis: 100, 300 and 1,000 sessions streaming
//            over WebSocket on both apis, delivery rate and latency, Redis commands per delta, lost or reordered
//            events, against the raw Redis PUBLISH rate and a baseline relay (--cluster-sessions=50,200 picks the
//            scales; --cluster-profile adds each process's CPU and allocation profile; --cluster-warmup=N the
//            unmeasured pass first, 200 sessions, 0 for none)
//   search   full-text search over 100,000 sessions / 1,000,000 messages of one tenant among several (p50 / p99 at
//            1 and 10 concurrent queries, the plan through the GIN index) and fork of 1,000- and 10,000-node trees
//            (--search-sessions=10000 for a quicker, smaller run)
//   fairness one tenant's load never takes another's latency: a bystander tenant's request and webhook delivery
//            latency while another imports 100,000 nodes or piles up deliveries to a webhook endpoint that never
//            answers, as a ratio of its idle p99 (target <= 2x), on the embedded runtime and the machine's Postgres
//            (--fairness-runtimes, --fairness-runs=N, --fairness-import-nodes, --fairness-measure-ms)
//   otel     what OpenTelemetry costs: runs/s at 100 sessions of the api with tracing on at 100% sampling (every span
//            exported over OTLP to a local sink) against off, side by side, measured in alternating rounds (target
//            >= 0.9x), with the api's CPU ms per run, spans and OTLP bytes per run (--otel-runtimes, --otel-sessions,
//            --otel-rounds, --otel-measure-ms, --otel-profile=DIR). Only when named.
//   soak     the chaos suite's deployment and load for 30 minutes (CANOPY_BENCH_SOAK_MINUTES) with a fault every
//            minute: runs lost / duplicated / stuck, 5xx, recovery time, memory each minute. Only when named.
// Every option can also be given as CANOPY_BENCH_<SECTION>_<NAME> (CANOPY_BENCH_CLUSTER_SESSIONS=50).

import { cpus, totalmem } from 'node:os';

import { clusterOptions, runClusterBench } from './cluster/cluster.bench';
import { clusterVerdicts, printClusterReport } from './cluster/report';
import { engineOptions, engineVerdicts, printEngineReport, runEngineBench } from './engine.bench';
import { fairnessOptions, fairnessVerdicts, printFairnessReport, runFairnessBench } from './fairness.bench';
import { httpBenchOptions, httpVerdicts, printHttpReport, runHttpBench } from './http.bench';
import { liveOptions, liveVerdicts, printLiveReport, runLiveBench } from './live.bench';
import { longOptions, longVerdicts, printLongReport, runLongBench } from './long.bench';
import { otelOptions, otelVerdicts, printOtelReport, runOtelBench } from './otel.bench';
import type { OptionSource } from './lib/options';
import { printVerdicts, type Verdict } from './lib/report';
import { printSearchReport, runSearchBench, searchOptions, searchVerdicts } from './search.bench';
import { runSoakBench, soakMinutes } from './soak.bench';

interface Section {
  /** What the command line selects it by. */
  name: string;
  title: string;
  /** Runs the section's benchmarks, prints their tables under the title, and answers its verdicts. */
  run: (title: string, options: OptionSource) => Promise<Verdict[]>;
  /** Runs only when named on the command line (too long for the quick run). */
  onlyNamed?: boolean;
}

/** A section that runs, prints its report, and judges its result. */
function section<R>(
  name: string,
  title: string,
  run: (options: OptionSource) => Promise<R>,
  print: (title: string, result: R) => void,
  verdicts: (result: R) => Verdict[],
): Section {
  return {
    name,
    title,
    run: async (sectionTitle, options) => {
      const result = await run(options);
      print(sectionTitle, result);
      return verdicts(result);
    },
  };
}

const SECTIONS: Section[] = [
  section(
    'engine',
    'Session engine (mock:echo on Postgres)',
    (options) => runEngineBench(engineOptions(options)),
    printEngineReport,
    engineVerdicts,
  ),
  section(
    'http',
    'The public API over HTTP (api process + separate load generator)',
    (options) => runHttpBench(httpBenchOptions(options)),
    printHttpReport,
    httpVerdicts,
  ),
  {
    // Only when named: its database counters settle for 11 s around each measurement (a minute and more).
    ...section(
      'long',
      'Long conversations: a run of a 10,000-message session against a 10-message one (truncate, 8,000-token window)',
      (options) => runLongBench(longOptions(options)),
      printLongReport,
      longVerdicts,
    ),
    onlyNamed: true,
  },
  section(
    'live',
    'Long sessions live: memory per live session and snapshot bytes of a 10,000-message session against a 10-message one',
    (options) => runLiveBench(liveOptions(options)),
    printLiveReport,
    liveVerdicts,
  ),
  section(
    'cluster',
    'Distributed runtime (2 api + 2 workers, mock:script over WebSocket)',
    (options) => runClusterBench(clusterOptions(options)),
    printClusterReport,
    clusterVerdicts,
  ),
  section(
    'search',
    'Finding and forking conversations (Postgres full-text search, fork in one statement)',
    (options) => runSearchBench(searchOptions(options)),
    printSearchReport,
    searchVerdicts,
  ),
  section(
    'fairness',
    "Fairness between tenants (a bystander's latency while another tenant imports or its webhook hangs)",
    (options) => runFairnessBench(fairnessOptions(options)),
    printFairnessReport,
    fairnessVerdicts,
  ),
  {
    // Only when named: two services side by side, several rounds (a few minutes).
    ...section(
      'otel',
      'What OpenTelemetry costs (the api at 100 sessions, tracing on at 100% sampling against off)',
      (options) => runOtelBench(otelOptions(options)),
      printOtelReport,
      otelVerdicts,
    ),
    onlyNamed: true,
  },
  {
    name: 'soak',
    title: 'Soak: 2 api + 2 workers under steady load with a fault every minute',
    onlyNamed: true,
    run: async (title, options) => {
      console.log(`\n${title}`);
      return runSoakBench(soakMinutes(options.env));
    },
  },
];

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const wanted = argv.filter((arg) => !arg.startsWith('-'));
  const unknown = wanted.filter((name) => !SECTIONS.some((s) => s.name === name));
  if (unknown.length > 0) {
    throw new Error(
      `unknown bench section(s): ${unknown.join(', ')}; known: ${SECTIONS.map((s) => s.name).join(', ')}`,
    );
  }
  const quick = wanted.length === 0;
  const sections = quick
    ? SECTIONS.filter((s) => !s.onlyNamed)
    : SECTIONS.filter((s) => wanted.includes(s.name));

  printMachine();
  if (quick)
    console.log(
      'The quick run: every section but the soak at small scales (name a section for its full run).',
    );
  const started = performance.now();
  const verdicts: Verdict[] = [];
  for (const section of sections) {
    const sectionStarted = performance.now();
    verdicts.push(...(await section.run(section.title, { argv, env: process.env, quick })));
    console.log(`(${section.name}: ${((performance.now() - sectionStarted) / 1000).toFixed(1)} s)`);
  }
  printVerdicts(
    `Targets (${sections.map((s) => s.name).join(', ')}; ${((performance.now() - started) / 1000).toFixed(0)} s)`,
    verdicts,
  );
}

function printMachine(): void {
  const cpuList = cpus();
  const model = cpuList[0]?.model.trim() ?? 'unknown CPU';
  const gc = typeof (globalThis as { gc?: unknown }).gc === 'function' ? ', gc exposed' : '';
  console.log(`Machine: node ${process.version} (${process.platform}/${process.arch}${gc})`);
  console.log(`CPU:     ${model}, ${cpuList.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
