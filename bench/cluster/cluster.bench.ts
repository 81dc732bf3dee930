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
// per delivered event. Every process of both runs carries an event-loop delay probe (loop-delay.cjs),
// and its p99 over the streaming phase is reported per process, with its garbage-collection pauses.
// `--cluster-profile` (or CANOPY_BENCH_CLUSTER_PROFILE=1) also profiles each process's CPU and allocations over the
// last scale's streaming phase and prints its top functions by self time and by bytes allocated;
// CANOPY_BENCH_PROFILE_DIR=<dir> keeps the profiles there (`canopy-worker-1.cpuprofile`, `.heapprofile`).
// CANOPY_BENCH_NODE_OPTIONS adds node options to Canopy's processes (a tuning against the same run's baseline).
// Each deployment first plays an unmeasured pass of 200 sessions (`--cluster-warmup=N`, 0 for none), so the figures are
// those of warm processes (code optimized, the pools' connections open with their plans made), as a deployment runs.
// The CPU per delivered event is also printed by part (workers, apis, Redis, Postgres) for both deployments.
// Scales: CANOPY_BENCH_CLUSTER_SESSIONS=50 or `npm run bench -- cluster --cluster-sessions=50,200`. The quick run
// (`npm run bench`): 300 sessions of cold processes (no warm-up pass: both deployments alike), judged there.

import { Redis } from 'ioredis';

import { escapeGlob } from '../../libs/realtime/src/redis/redis-keys';
import { Cluster, prepareTemplate } from '../../libs/testing/src';
import { serviceProcess } from '../../scripts/lib/service-process.mjs';
import { intListOption, intOption, type OptionSource } from '../lib/options';
import { RelayDeployment } from '../relay/relay-deployment';
import { LoopDelayProbe } from './loop-delay-probe';
import { rawPublishRate } from './raw-publish';
import { measureScale, pidsOf } from './scale';
import { APIS, WORKERS, type ClusterBenchResult, type ClusterLevel } from './scenario';

export interface ClusterOptions {
  scales: number[];
  /**
   * Sessions of the unmeasured pass each deployment plays before its scales (`--cluster-warmup=N`, 0 for none):
   * figures of warm processes, as a deployment's are (its code optimized, its pools' connections open with their
   * plans made), as the HTTP bench's are.
   */
  warmupSessions: number;
  /** Whether to profile each process's CPU: `--cluster-profile` or CANOPY_BENCH_CLUSTER_PROFILE=1. */
  profile: boolean;
}

export function clusterOptions(from: OptionSource): ClusterOptions {
  return {
    scales: intListOption(from, 'cluster', 'sessions', from.quick ? [300] : [100, 300, 1_000], [1, 5_000]),
    warmupSessions: intOption(from, 'cluster', 'warmup', from.quick ? 0 : 200, [0, 5_000]),
    profile: from.argv.includes('--cluster-profile') || from.env.CANOPY_BENCH_CLUSTER_PROFILE === '1',
  };
}

export async function runClusterBench(options: ClusterOptions): Promise<ClusterBenchResult> {
  const { scales, profile, warmupSessions } = options;
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
