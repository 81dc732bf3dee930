// The soak: the chaos suite's deployment and load (2 apis + 2 workers on a private redis-server, 50 sessions
// streaming run after run, SSE subscribers on both apis resuming with `after`) for CANOPY_BENCH_SOAK_MINUTES
// (default 30), with a fault every minute in turn: Redis killed and restarted empty, Redis paused 5 s, every Redis
// connection cut, a worker SIGKILLed, an api SIGKILLed. Prints one line per fault (runs checked, lost, duplicated,
// stuck, 5xx, max recovery) and the memory of every process each minute: resident (RSS) and the V8 heap in use
// after a full garbage collection (asked through each process's inspector), so retained memory is told apart from
// garbage and from pages V8 keeps. Not in CI: `npm run bench -- soak` (CANOPY_BENCH_SOAK_LOGS=DIR keeps the logs).

import {
  ChaosLoad,
  Cluster,
  PrivateRedis,
  prepareTemplate,
  summaryLine,
  type CaseFigures,
} from '@canopy/testing';

import { judge, type Verdict } from './lib/report';

const LOCK_MS = 2_000;
const BOUND_MS = LOCK_MS * 3 + 10_000;

/** The least load each minute gets after its fault, however long the previous minute's checks took. */
const MIN_LOAD_MS = 40_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Time since the soak started, m:ss, at the start of each printed line. */
const clock = (started: number) => {
  const s = Math.round((Date.now() - started) / 1000);
  return `[${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}]`;
};

type Fault = { name: string; inject: (cluster: Cluster, redis: PrivateRedis) => Promise<void> };

const FAULTS: Fault[] = [
  { name: 'redis kill -9 + restart (empty)', inject: (_c, r) => r.restart(1_000) },
  {
    name: 'redis paused 5 s',
    inject: async (_c, r) => {
      r.pause();
      await sleep(5_000);
      r.resume();
    },
  },
  { name: 'redis client kill', inject: async (_c, r) => void (await r.killClients()) },
  {
    name: 'worker SIGKILL',
    inject: async (c) => {
      await c.kill('worker-1');
      await c.startWorker(1);
    },
  },
  {
    name: 'api SIGKILL',
    inject: async (c) => {
      await c.kill('api-2');
      await sleep(2_000);
      await c.startApi(2);
    },
  },
];

export async function runSoakBench(minutes: number): Promise<Verdict[]> {
  // The test role and the migrated template the cluster's database is made from (on a machine where no test ran
  // yet, neither exists).
  await prepareTemplate();
  const redis = await PrivateRedis.start();
  const cluster = new Cluster({
    apis: 2,
    workers: 2,
    redisUrl: redis.url,
    readyTimeoutMs: 120_000,
    inspect: true,
    // CANOPY_BENCH_SOAK_LOGS=DIR keeps every process's log there (<name>.log), for what the figures cannot say.
    ...(process.env.CANOPY_BENCH_SOAK_LOGS ? { logDir: process.env.CANOPY_BENCH_SOAK_LOGS } : {}),
    env: {
      RUN_LOCK_DURATION_MS: String(LOCK_MS),
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_TENANT: '0',
      MAX_CONCURRENT_RUNS_PER_TENANT: '1000',
    },
  });
  const figures: CaseFigures[] = [];
  const soakStarted = Date.now();
  let load: ChaosLoad | null = null;
  try {
    await cluster.start();
    const tenant = await fetch(`${cluster.api(1)}/v1/admin/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cluster.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'soak' }),
    });
    const key = ((await tenant.json()) as { apiKey: string }).apiKey;
    load = new ChaosLoad({
      apis: () =>
        [...cluster.processes.values()].filter((p) => p.name.startsWith('api-') && p.url).map((p) => p.url!),
      key,
      sessions: 50,
      delayMs: 30,
      words: 20,
      subscribersPerApi: 3,
    });
    await load.start();
    const started = Date.now();
    await printMemory(cluster, 0);
    for (let minute = 1; minute <= minutes; minute++) {
      const fault = FAULTS[(minute - 1) % FAULTS.length]!;
      const mark = load.mark();
      const redelivered = load.redelivered();
      await fault.inject(cluster, redis);
      const faultEnded = Date.now();
      // The rest of the minute under load, then the checks over every run of the minute. At least MIN_LOAD_MS of
      // load after each fault: on a loaded machine the checks of a minute (every tree read back through the apis)
      // can outlast it, and a minute with no time left would check no run at all.
      await sleep(Math.max(started + minute * 60_000 - Date.now(), MIN_LOAD_MS));
      const f = await load.check(`min ${minute} ${fault.name}`, mark, 1, faultEnded, BOUND_MS, redelivered);
      figures.push(f);
      console.log(`${clock(started)} ${summaryLine(f)}`);
      await printMemory(cluster, minute, f.treeNodes);
    }
  } finally {
    await load?.stop();
    await cluster.stop();
    await redis.down();
  }
  const total = (k: keyof CaseFigures) => figures.reduce((n, f) => n + (f[k] as number), 0);
  console.log(
    `soak ${minutes} min (${clock(soakStarted)} wall): faults=${figures.length} runs=${total('runsChecked')} lost=${total('lost')} ` +
      `duplicated=${total('duplicated')} stuck=${total('stuck')} stale=${total('stale')} badTrees=${total('badTrees')} ` +
      `5xx=${total('fiveHundreds')} 503=${total('unavailable')} redelivered=${total('redelivered')} ` +
      `maxRecoveryMs=${Math.max(0, ...figures.map((f) => f.maxRecoveryMs))}`,
  );
  return soakVerdicts(figures);
}

/** The targets: no run lost, duplicated, stuck or stale, no bad tree, no 5xx answer, over every fault. */
export function soakVerdicts(figures: readonly CaseFigures[]): Verdict[] {
  const total = (k: keyof CaseFigures) => figures.reduce((n, f) => n + (f[k] as number), 0);
  const spread = `${figures.length} faults, ${total('runsChecked')} runs checked`;
  const count = (target: string, value: number, detail: string) =>
    judge('soak', target, { value, limit: 0, kind: 'max', format: String, spread: `${spread}; ${detail}` });
  return [
    count(
      'runs lost, duplicated, stuck or stale, and bad trees = 0',
      total('lost') + total('duplicated') + total('stuck') + total('stale') + total('badTrees'),
      `lost ${total('lost')}, duplicated ${total('duplicated')}, stuck ${total('stuck')}`,
    ),
    count(
      '5xx answers = 0',
      total('fiveHundreds'),
      `503 ${total('unavailable')}, max recovery ${Math.max(0, ...figures.map((f) => f.maxRecoveryMs))} ms`,
    ),
  ];
}

/** One line per minute: each process's RSS / heap used after a GC / external, in MB. */
async function printMemory(cluster: Cluster, minute: number, treeNodes?: number): Promise<void> {
  const memory = await cluster.memoryAfterGc();
  const parts = Object.entries(memory)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(
      ([name, m]) => `${name} ${Math.round(m.rssMb)}/${Math.round(m.heapUsedMb)}/${Math.round(m.externalMb)}`,
    );
  // The live sessions hold their trees: heap grows with the nodes of the load's 50 conversations, printed with it.
  const nodes = treeNodes === undefined ? '' : `; ${treeNodes} nodes in the load's trees`;
  console.log(`minute ${minute} memory MB (rss/heapUsed after GC/external): ${parts.join(', ')}${nodes}`);
}

export function soakMinutes(env: NodeJS.ProcessEnv): number {
  const minutes = Number(env.CANOPY_BENCH_SOAK_MINUTES ?? 30);
  return Number.isFinite(minutes) && minutes >= 1 ? Math.floor(minutes) : 30;
}
