// What OpenTelemetry costs: runs/s of the api process as deployed (bench/lib/processes.ts: `npm start`'s flags) at 100
// concurrent sessions (wait mode, mock:echo, the HTTP load generator in a process of its own), with tracing on at
// 100% sampling (OTEL_TRACES_SAMPLER=always_on, every span exported over OTLP/HTTP protobuf to a local sink that
// reads and drops what it gets, the HTTP, Express, pg and ioredis instrumentations on; metrics exported too) against
// the same service with OpenTelemetry off. Both services run side by side on the same runtime and are measured in
// turns, off and on alternately (ABBA), so the machine's drift falls on both; the ratio is on/off of the summed
// runs, and its spread the per-round ratios. Target: on >= 0.9x off. The batch span processor is given room for the
// load (a queue of 65,536 spans, exported every second in batches of 4,096) so it drops nothing it is given:
// the figure is the cost of tracing everything, not of dropping it.
// Options: --otel-runtimes=postgres,embedded --otel-sessions=100 --otel-rounds=4 --otel-measure-ms=6000 (or
// CANOPY_BENCH_OTEL_* variables). Only when named (`npm run bench -- otel`).

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { prepareTemplate } from '../libs/testing/src';
import { runHttpLoad, type HttpLoadResult } from './lib/load';
import { choiceListOption, intOption, type OptionSource } from './lib/options';
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

export interface OtelBenchOptions {
  runtimes: Runtime[];
  sessions: number;
  rounds: number;
  measureMs: number;
}

export interface OtelRuntimeResult {
  runtime: Runtime;
  measures: OtelMeasure[];
  /** What the sink received from the traced service over its life. */
  exported: { requests: number; bytes: number };
}

export interface OtelBenchResult {
  options: OtelBenchOptions;
  runtimes: OtelRuntimeResult[];
}

export function otelOptions(from: OptionSource): OtelBenchOptions {
  const { quick } = from;
  const runtimes: Runtime[] = ['postgres', 'embedded'];
  return {
    runtimes: choiceListOption(from, SECTION, 'runtimes', runtimes, quick ? ['postgres'] : runtimes),
    sessions: intOption(from, SECTION, 'sessions', 100, [1, 1_000]),
    rounds: intOption(from, SECTION, 'rounds', quick ? 2 : 4, [1, 50]),
    measureMs: intOption(from, SECTION, 'measure-ms', quick ? 3_000 : 6_000, [1_000, 600_000]),
  };
}

/** An OTLP/HTTP endpoint that reads every export and drops it, counting what it got. */
class OtlpSink {
  requests = 0;
  bytes = 0;
  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpSink> {
    const server = createServer();
    const sink = new OtlpSink(server);
    server.on('request', (req, res) => {
      req.on('data', (chunk: Buffer) => (sink.bytes += chunk.length));
      req.on('end', () => {
        sink.requests++;
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return sink;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
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

async function measureRuntime(runtime: Runtime, options: OtelBenchOptions): Promise<OtelRuntimeResult> {
  const sink = await OtlpSink.start();
  const off = await ApiProcess.start({ runtime });
  let on: ApiProcess | null = null;
  try {
    on = await ApiProcess.start({ runtime, env: tracingEnv(sink.url) });
    // Warmed alike: their first thousands of requests run while V8 still compiles the hot paths.
    for (const api of [off, on]) await load(api, 10, SERVICE_WARMUP_MS);
    const measures: OtelMeasure[] = [];
    for (let round = 0; round < options.rounds; round++) {
      // ABBA: off, on, then on, off in the next round.
      const order = round % 2 === 0 ? [off, on] : [on, off];
      for (const api of order) {
        const result = await load(api, options.sessions, options.measureMs).catch((err: unknown) => {
          throw api.explain(err);
        });
        measures.push({
          tracing: api === on,
          perSec: result.perSec,
          p50Ms: result.p50Ms,
          p99Ms: result.p99Ms,
          errors: Object.values(result.errors).reduce((a, b) => a + b, 0),
        });
      }
    }
    return { runtime, measures, exported: { requests: sink.requests, bytes: sink.bytes } };
  } finally {
    await off.stop();
    await on?.stop();
    await sink.close();
  }
}

export async function runOtelBench(options: OtelBenchOptions): Promise<OtelBenchResult> {
  await prepareTemplate();
  const runtimes: OtelRuntimeResult[] = [];
  for (const runtime of options.runtimes) runtimes.push(await measureRuntime(runtime, options));
  return { options, runtimes };
}

export function printOtelReport(title: string, result: OtelBenchResult): void {
  const ms = (v: number | null) => (v === null ? '-' : `${v.toFixed(1)} ms`);
  for (const r of result.runtimes) {
    printTable(
      `${title}: ${r.runtime}, ${result.options.sessions} sessions, ${result.options.measureMs / 1000} s windows`,
      ['round', 'tracing', 'runs/s', 'p50', 'p99', 'errors'],
      r.measures.map((m, i) => [
        String(Math.floor(i / 2) + 1),
        m.tracing ? 'on (100%)' : 'off',
        m.perSec.toFixed(1),
        ms(m.p50Ms),
        ms(m.p99Ms),
        String(m.errors),
      ]),
      new Set([2, 3, 4, 5]),
    );
    const { ratio: value, rounds } = tracingRatio(r.measures);
    console.log(
      `on/off ${ratio(value)} (rounds ${spread(rounds, ratio)}); exported ${r.exported.requests} OTLP requests, ${(
        r.exported.bytes /
        2 ** 20
      ).toFixed(1)} MiB`,
    );
  }
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
