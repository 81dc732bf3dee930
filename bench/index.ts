// `npm run bench`: runs every benchmark section and prints its table. Arguments pick sections by name
// (`npm run bench -- core`); none runs them all. Add a section (cluster, store ...) to SECTIONS.
//   core    @canopy/core's tree operations and UI projection (tinybench, time per call and growth ratios)
//   engine  the session engine on the machine's Postgres: runs/s and latency at 1/10/100 sessions, as a share
//           of the raw Postgres limit for a commit-shaped transaction
//   http    the api process as deployed (embedded PGlite, and the machine's Postgres), driven over HTTP by a
//           load generator process: runs/s, latency, CPU, memory and database work per run at 1/10/100
//           sessions, as a share of the in-process engine (--http-modes, --http-levels, --http-runtimes)
//   cluster 2 api + 2 worker processes on the machine's Postgres and Redis: 100, 300 and 1,000 sessions streaming
//           over WebSocket on both apis, delivery rate and latency, Redis commands per delta, lost or reordered
//           events, against the raw Redis PUBLISH rate and a baseline relay (--cluster-sessions=50,200 or
//           CANOPY_BENCH_CLUSTER_SESSIONS picks the scales; --cluster-profile adds each process's CPU and
//           allocation profile; --cluster-warmup=N the unmeasured pass first, 200 sessions, 0 for none)
//   publish the worker's publish path alone (coalescer, publisher, Redis event bus) against one PUBLISH per delta,
//           at 300 and 1,000 streaming sessions: CPU per publish and its ratio, GC pauses, latency
//   search  full-text search over 100,000 sessions / 1,000,000 messages of one tenant among several (p50 / p99 at
//           1 and 10 concurrent queries, the plan through the GIN index) and fork of 1,000- and 10,000-node trees
//           (CANOPY_BENCH_SEARCH_SESSIONS=10000 for a quicker, smaller run)
//   usage   GET /v1/usage and the quota check over 1,000,000 runs of a year (CANOPY_BENCH_USAGE_RUNS to resize)
//   soak    the chaos suite's deployment and load for 30 minutes (CANOPY_BENCH_SOAK_MINUTES) with a fault every
//           minute: runs lost / duplicated / stuck, 5xx, recovery time, memory each minute. Only when named.
//   fairness one tenant's load never takes another's latency: a bystander tenant's request and webhook delivery
//           latency (p50/p99/max, non-2xx answers) while another imports 100,000 nodes (one canopy document, then a
//           bulk NDJSON import) or piles up deliveries to a webhook endpoint that never answers, as a ratio of its
//           idle p99 (target <= 2x), on the embedded runtime and the machine's Postgres (--fairness-runtimes,
//           --fairness-runs=N repeats it and prints the spread, --fairness-import-nodes, --fairness-measure-ms)

import { cpus, totalmem } from 'node:os';

import {
  clusterProfile,
  clusterScales,
  clusterWarmup,
  printClusterReport,
  runClusterBench,
} from './cluster.bench';
import { runCoreBench } from './core.bench';
import { printEngineReport, runEngineBench } from './engine.bench';
import { fairnessOptions, printFairnessReport, runFairnessBench } from './fairness.bench';
import { httpBenchOptions, printHttpReport, runHttpBench } from './http.bench';
import { printPublishReport, runPublishBench } from './publish.bench';
import { printReports } from './report';
import { printSearchReport, runSearchBench } from './search.bench';
import { printUsageReport, runUsageBench } from './usage.bench';
import { runSoakBench, soakMinutes } from './soak.bench';

interface Section {
  /** What the command line selects it by. */
  name: string;
  title: string;
  /** Runs the section's benchmarks and prints their table under the title. */
  run: (title: string) => Promise<void>;
  /** Runs only when named on the command line (too long for a full run). */
  onlyNamed?: boolean;
}

const SECTIONS: Section[] = [
  { name: 'core', title: 'Canopy core', run: async (title) => printReports(title, await runCoreBench()) },
  {
    name: 'engine',
    title: 'Session engine (mock:echo on Postgres)',
    run: async (title) => printEngineReport(title, await runEngineBench()),
  },
  {
    name: 'http',
    title: 'The public API over HTTP (api process + separate load generator)',
    run: async (title) =>
      printHttpReport(title, await runHttpBench(httpBenchOptions(process.argv.slice(2), process.env))),
  },
  {
    name: 'search',
    title: 'Finding and forking conversations (Postgres full-text search, fork in one statement)',
    run: async (title) => printSearchReport(title, await runSearchBench()),
  },
  {
    name: 'usage',
    title: 'Usage and quotas over a year of runs (Postgres, usage_daily rollup)',
    run: async (title) => printUsageReport(title, await runUsageBench()),
  },
  {
    name: 'cluster',
    title: 'Distributed runtime (2 api + 2 workers, mock:script over WebSocket)',
    run: async (title) =>
      printClusterReport(
        title,
        await runClusterBench(
          clusterScales(process.argv.slice(2), process.env),
          clusterProfile(process.argv.slice(2), process.env),
          clusterWarmup(process.argv.slice(2), process.env),
        ),
      ),
  },
  {
    name: 'publish',
    title: "The worker's publish path alone (Redis event bus) against one PUBLISH per delta",
    run: async (title) => printPublishReport(title, await runPublishBench()),
  },
  {
    name: 'fairness',
    title:
      "Fairness between tenants (a bystander's latency while another tenant imports or its webhook hangs)",
    run: async (title) =>
      printFairnessReport(title, await runFairnessBench(fairnessOptions(process.argv.slice(2), process.env))),
  },
  {
    name: 'soak',
    title: 'Soak: 2 api + 2 workers under steady load with a fault every minute',
    onlyNamed: true,
    run: async (title) => {
      console.log(`\n${title}`);
      await runSoakBench(soakMinutes(process.env));
    },
  },
];

async function main(): Promise<void> {
  const wanted = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
  const unknown = wanted.filter((name) => !SECTIONS.some((s) => s.name === name));
  if (unknown.length > 0) {
    throw new Error(
      `unknown bench section(s): ${unknown.join(', ')}; known: ${SECTIONS.map((s) => s.name).join(', ')}`,
    );
  }
  const sections =
    wanted.length === 0
      ? SECTIONS.filter((s) => !s.onlyNamed)
      : SECTIONS.filter((s) => wanted.includes(s.name));

  printMachine();
  for (const section of sections) {
    const started = performance.now();
    await section.run(section.title);
    console.log(`(${((performance.now() - started) / 1000).toFixed(1)} s)`);
  }
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
