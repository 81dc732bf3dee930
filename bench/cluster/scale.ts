// One scale of the cluster bench on one deployment (Canopy's Cluster or the baseline relay): a tenant and its
// sessions, every session subscribed on every api, then every prompt sent and the streaming phase measured until
// every run's end reached every subscriber: deliveries, latencies, Redis commands, CPU, event-loop delays, violations.

import type { ChildProcess } from 'node:child_process';

import type { Redis } from 'ioredis';

import { createTenant, inBatches, requestJson, waitFor } from '../lib/api-client';
import { percentile } from '../lib/percentile';
import { inDeployment } from './cpu-parts';
import { DeploymentCpu } from './deployment-cpu';
import type { LoopDelayProbe } from './loop-delay-probe';
import { BUS_COMMANDS, commandStats, PublishCounter, streamEntriesAdded } from './redis-counters';
import {
  APIS,
  DELTAS,
  DELTA_MS,
  REPLY,
  REQUESTS_IN_FLIGHT,
  SESSIONS_PER_SOCKET,
  type ClusterLevel,
} from './scenario';
import { BenchSocket, LatencyLog, peakOverlap, Track } from './subscribers';

/** What a scale is measured on: Canopy's Cluster, or the baseline relay. */
export interface Deployment {
  readonly processes: Map<string, { proc: ChildProcess }>;
  readonly adminKey: string;
  api(i: number): string;
}

export async function measureScale(
  cluster: Deployment,
  stats: Redis,
  sessions: number,
  probe: LoopDelayProbe,
  notBus: { channels: string[]; queueEvents: string } | null = null,
): Promise<ClusterLevel> {
  const apiUrls = Array.from({ length: APIS }, (_, i) => cluster.api(i + 1));
  const key = await createTenant(apiUrls[0]!, cluster.adminKey, `bench-${sessions}-${++tenantsMade}`);
  const ids = await inBatches(sessions, REQUESTS_IN_FLIGHT, (i) =>
    requestJson<{ id: string }>(apiUrls[i % APIS]!, key, 'POST', '/v1/sessions', {
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
    await inBatches(ids.length * APIS, REQUESTS_IN_FLIGHT, async (j) => {
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
    const cpu = await DeploymentCpu.start(cluster, stats);
    probe.reset();
    const commandsBefore = await commandStats(stats);
    const started = performance.now();
    latencies.open = true;
    await inBatches(ids.length, REQUESTS_IN_FLIGHT, (i) =>
      requestJson(apiUrls[i % APIS]!, key, 'POST', `/v1/sessions/${ids[i]}/prompt`, { content: 'go' }),
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
      p50Ms: percentile(sorted, 50) ?? Number.NaN,
      p99Ms: percentile(sorted, 99) ?? Number.NaN,
      maxMs: sorted.length > 0 ? sorted[sorted.length - 1]! : Number.NaN,
      steadyP99Ms: percentile(latencies.sorted('steady'), 99) ?? Number.NaN,
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

/** Each process's pid by name (the deployments forget them once stopped). */
export function pidsOf(deployment: Deployment): Map<string, number> {
  const pids = new Map<string, number>();
  for (const [name, { proc }] of deployment.processes) if (proc.pid !== undefined) pids.set(name, proc.pid);
  return pids;
}

/** Tenants made so far: each scale measured (a warm-up, a scale given twice) gets one of its own. */
let tenantsMade = 0;

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
