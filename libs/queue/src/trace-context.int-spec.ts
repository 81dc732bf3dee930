// A run's job carries the trace context of whoever enqueued it: on a BullMQ worker, and in the inline queue, the
// handler runs in that context (the request that started a run is the parent of the run's spans). Without
// OpenTelemetry the payload carries nothing.

import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { trace, type SpanContext } from '@opentelemetry/api';
import { canopyTracer, currentTraceCarrier } from '@canopy/common';
import { InMemoryTelemetry, eventually } from '@canopy/testing';
import { BullmqTurnQueue } from './bullmq-turn-queue';
import { InlineTurnQueue } from './inline-turn-queue';
import type { RunJob, TurnQueue } from './turn-queue.port';

const REDIS_URL = 'redis://127.0.0.1:6379';

function job(): RunJob {
  return { tenantId: randomUUID(), sessionId: `s-${randomUUID()}`, runId: randomUUID() };
}

/** Enqueues a job inside a span; answers the span's context and the context the handler ran in. */
async function handOver(queue: TurnQueue, seen: Map<string, SpanContext | undefined>) {
  const j = job();
  const enqueuer = await canopyTracer().startActiveSpan('request', async (span) => {
    await queue.enqueue(j);
    span.end();
    return span.spanContext();
  });
  const ran = await eventually(
    () => {
      if (!seen.has(j.runId)) throw new Error('not run yet');
      return seen.get(j.runId);
    },
    { timeoutMs: 10_000 },
  );
  return { enqueuer, ran };
}

describe('trace context through the turn queue', () => {
  let telemetry: InMemoryTelemetry;
  beforeAll(() => {
    telemetry = InMemoryTelemetry.start();
  });
  afterAll(() => telemetry.shutdown());

  it('BullMQ: the worker runs the job in the enqueuing span', async () => {
    const prefix = `qtest${randomBytes(4).toString('hex')}`;
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const queue = new BullmqTurnQueue({ connection, prefix, concurrency: 2 });
    const seen = new Map<string, SpanContext | undefined>();
    queue.process(
      (j) => {
        seen.set(j.runId, trace.getActiveSpan()?.spanContext());
        return Promise.resolve();
      },
      () => Promise.resolve(),
    );
    try {
      const { enqueuer, ran } = await handOver(queue, seen);
      expect(ran?.traceId).toBe(enqueuer.traceId);
      expect(ran?.spanId).toBe(enqueuer.spanId);
      expect(ran?.isRemote).toBe(true);
    } finally {
      await queue.close(2_000);
      const keys = await connection.keys(`${prefix}:*`);
      if (keys.length) await connection.del(...keys);
      await connection.quit();
    }
  });

  it('inline: the run executes in the enqueuing span too', async () => {
    const queue = new InlineTurnQueue();
    const seen = new Map<string, SpanContext | undefined>();
    queue.process(
      (j) => {
        seen.set(j.runId, trace.getActiveSpan()?.spanContext());
        return Promise.resolve();
      },
      () => Promise.resolve(),
    );
    const { enqueuer, ran } = await handOver(queue, seen);
    expect(ran?.traceId).toBe(enqueuer.traceId);
    expect(ran?.spanId).toBe(enqueuer.spanId);
    await queue.close();
  });
});

describe('without OpenTelemetry', () => {
  it('captures no trace context', () => {
    expect(currentTraceCarrier()).toBeUndefined();
  });
});
