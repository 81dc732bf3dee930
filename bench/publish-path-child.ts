// One measurement of the publish bench (bench/publish.bench.ts), in a process of its own started with the
// worker's node flags: `sessions` streams each push a text_delta every DELTA_MS, and each delta goes out as the
// deployment sends it. `canopy`: through the worker's path (DeltaCoalescer -> SessionPublisher -> the Redis
// event bus of createRedisRealtime, with the deployment's options); `bare`: one ioredis PUBLISH per delta on a
// plain connection, as the cluster bench's baseline relay worker does. Prints one JSON line: publishes per second,
// this process's CPU per publish, garbage-collection pauses per second and the publish latency (push to answer).

import { performance, PerformanceObserver } from 'node:perf_hooks';

import { Redis } from 'ioredis';

import { loadConfig } from '../libs/common/src';
import type { SessionEventInput } from '../libs/core/src';
import { createRedisRealtime, DeltaCoalescer } from '../libs/realtime/src';
import { SessionPublisher } from '../libs/session/src/session-publisher';

export interface PublishJob {
  variant: 'canopy' | 'bare';
  sessions: number;
  warmupMs: number;
  measureMs: number;
  redisUrl: string;
  prefix: string;
}

export interface PublishMeasurement {
  publishesPerSec: number;
  cpuUsPerPublish: number;
  /** This process's CPU over the window, in % of one core (its V8 helper threads included). */
  cpuPercent: number;
  gcMsPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

const DELTA_MS = 50;

const job = JSON.parse(process.argv[2]!) as PublishJob;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Sends one delta of a session; calls `done` once it was answered. */
type Sender = (sessionId: string, index: number, done: () => void) => void;

async function main(): Promise<void> {
  const { sender, close } = start();
  let gcMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration;
  });
  gc.observe({ entryTypes: ['gc'] });
  let measuring = false;
  let published = 0;
  const latencies: number[] = [];
  const end = performance.now() + job.warmupMs + job.measureMs;
  const stream = async (i: number) => {
    await sleep(Math.random() * DELTA_MS);
    const sessionId = `s${i}`;
    for (let n = 0; performance.now() < end; n++) {
      await sleep(DELTA_MS);
      const pushed = performance.now();
      sender(sessionId, n, () => {
        if (!measuring) return;
        published++;
        latencies.push(performance.now() - pushed);
      });
    }
  };
  const streams = Promise.all(Array.from({ length: job.sessions }, (_, i) => stream(i)));
  await sleep(job.warmupMs);
  measuring = true;
  gcMs = 0;
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  await sleep(job.measureMs);
  const used = process.cpuUsage(cpu);
  const wallMs = performance.now() - t0;
  measuring = false;
  const count = published;
  const gcInWindow = gcMs;
  await streams;
  await close();
  gc.disconnect();
  latencies.sort((a, b) => a - b);
  const cpuUs = used.user + used.system;
  const result: PublishMeasurement = {
    publishesPerSec: (count / wallMs) * 1000,
    cpuUsPerPublish: cpuUs / Math.max(1, count),
    cpuPercent: cpuUs / 10 / wallMs,
    gcMsPerSec: (gcInWindow / wallMs) * 1000,
    p50Ms: latencies[Math.floor(latencies.length * 0.5)] ?? 0,
    p99Ms: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function start(): { sender: Sender; close: () => Promise<void> } {
  if (job.variant === 'bare') {
    const redis = new Redis(job.redisUrl);
    return {
      sender: (sessionId, n, done) =>
        void redis
          .publish(
            `${job.prefix}:ev:${sessionId}`,
            JSON.stringify({
              type: 'event',
              sessionId,
              seq: n + 1,
              event: 'text_delta',
              data: { runId: sessionId, index: 0, delta: ` word${n}` },
              at: Date.now(),
            }),
          )
          .then(done),
      close: async () => void (await redis.quit()),
    };
  }
  const config = loadConfig({});
  const realtime = createRedisRealtime({
    url: job.redisUrl,
    prefix: job.prefix,
    replayLimit: config.sessions.replayLimit,
    replayTtlSeconds: config.redis.replayTtlSeconds,
    commandTimeoutMs: config.redis.commandTimeoutMs,
  });
  const quiet = () => undefined;
  const publisher = new SessionPublisher(realtime.bus, realtime.feed, {
    info: quiet,
    warn: quiet,
    error: quiet,
  });
  publisher.onPublished(() => undefined); // as the service's metrics do
  // A run's coalescer per session, as the worker's run executor has; a delta 50 ms after the last one goes out at
  // once (the window's leading edge), so each push is one publish.
  const coalescers = new Map<string, DeltaCoalescer>();
  const answered = new Map<string, () => void>();
  return {
    sender: (sessionId, n, done) => {
      let coalescer = coalescers.get(sessionId);
      if (!coalescer) {
        coalescer = new DeltaCoalescer({
          windowMs: config.sessions.coalesceMs,
          flush: (events) =>
            publisher.publish('bench-tenant', sessionId, events).then(() => answered.get(sessionId)?.()),
        });
        coalescers.set(sessionId, coalescer);
      }
      answered.set(sessionId, done);
      const delta: SessionEventInput = {
        type: 'text_delta',
        data: { runId: sessionId, index: 0, delta: ` word${n}` },
      };
      coalescer.push(delta);
    },
    close: async () => {
      await Promise.all([...coalescers.values()].map((c) => c.close()));
      await realtime.close();
    },
  };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
