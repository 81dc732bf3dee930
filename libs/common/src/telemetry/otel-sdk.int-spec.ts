// The OpenTelemetry SDK as a Canopy process starts it (startTelemetry from the validated configuration), in a child
// process, since the instrumentations' require hooks do not apply under jest: an incoming request with a
// traceparent continues that trace through Express, a pg statement and an ioredis command, exported to a local OTLP
// receiver over http/json and http/protobuf; a log line inside carries the trace and span ids. With no OTEL_*
// configuration nothing is started and the SDK is not even loaded.

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { OtlpReceiver, adminUrl } from '@canopy/testing';

const CHILD = `
  const { loadConfig } = require(${JSON.stringify(join(__dirname, '../config/config.schema'))});
  const { startTelemetry, shutdownTelemetry } = require(${JSON.stringify(join(__dirname, 'telemetry'))});
  const { traceLogFields } = require(${JSON.stringify(join(__dirname, 'log-correlation'))});
  const started = startTelemetry(loadConfig(process.env).telemetry, 'canopy-test');
  const sdkLoaded = Object.keys(require.cache).some((k) => k.includes('@opentelemetry/sdk-node'));
  const express = require('express');
  const { Client } = require('pg');
  const { Redis } = require('ioredis');
  (async () => {
    const pg = new Client({ connectionString: process.env.TEST_PG_URL });
    await pg.connect();
    const redis = new Redis('redis://127.0.0.1:6379');
    const app = express();
    app.get('/work/:id', async (req, res) => {
      await pg.query('SELECT 1 AS one');
      await redis.ping();
      res.json({ log: traceLogFields() });
    });
    const server = app.listen(0, '127.0.0.1', () =>
      process.stdout.write(JSON.stringify({ port: server.address().port, started, sdkLoaded }) + '\\n'));
    process.on('SIGTERM', async () => {
      server.close();
      await pg.end();
      redis.disconnect();
      await shutdownTelemetry();
      process.exit(0);
    });
  })();
`;

interface Child {
  proc: ChildProcess;
  port: number;
  started: boolean;
  sdkLoaded: boolean;
}

async function startChild(env: Record<string, string>): Promise<Child> {
  const proc = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), '-e', CHILD], {
    // Only what the case sets: no OTEL_* variable of this process leaks into the child.
    // eslint-disable-next-line no-restricted-properties -- the child needs PATH
    env: { PATH: process.env.PATH ?? '', TEST_PG_URL: adminUrl(), ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout }).once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
  });
  return { proc, ...(JSON.parse(line) as Omit<Child, 'proc'>) };
}

async function stop(child: Child): Promise<void> {
  const exited = new Promise((r) => child.proc.once('exit', r));
  child.proc.kill('SIGTERM');
  await exited;
}

const TRACE_ID = randomBytes(16).toString('hex');
const PARENT_ID = randomBytes(8).toString('hex');

async function request(child: Child): Promise<{ log: Record<string, string> }> {
  const res = await fetch(`http://127.0.0.1:${child.port}/work/42`, {
    headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
  });
  return (await res.json()) as { log: Record<string, string> };
}

describe('OpenTelemetry SDK in a process', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
  });
  afterAll(() => receiver.close());

  it('continues an incoming traceparent through HTTP, Express, pg and ioredis (http/json)', async () => {
    const child = await startChild({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_METRIC_EXPORT_INTERVAL: '200',
    });
    expect(child).toMatchObject({ started: true, sdkLoaded: true });
    const body = await request(child);
    // The log line written inside the request carries the request's trace.
    expect(body.log.trace_id).toBe(TRACE_ID);
    expect(body.log.span_id).toMatch(/^[0-9a-f]{16}$/);
    await stop(child);
    const spans = await receiver.waitForSpans((all) => {
      const mine = all.filter((s) => s.traceId === TRACE_ID);
      return mine.some(
        (s) => s.attributes['db.system.name'] === 'postgresql' || s.attributes['db.system'] === 'postgresql',
      ) && mine.some((s) => /redis/.test(String(s.attributes['db.system.name'] ?? s.attributes['db.system'])))
        ? mine
        : undefined;
    });
    const server = spans.find((s) => s.kind === 2 && s.parentSpanId === PARENT_ID);
    expect(server).toBeDefined();
    expect(server!.service).toBe('canopy-test');
    expect(server!.attributes['http.route']).toBe('/work/:id');
    // Everything else is in the server span's subtree.
    const ids = new Set(spans.map((s) => s.spanId));
    for (const s of spans.filter((x) => x !== server)) expect(ids.has(s.parentSpanId)).toBe(true);
    // Express names the request's span by its route (and makes no span per middleware).
    expect(server!.name).toBe('GET /work/:id');
    expect(spans.some((s) => s.attributes['express.type'] !== undefined)).toBe(false);
    // The HTTP server's metrics went out too.
    expect(receiver.metrics.some((m) => m.name === 'http.server.request.duration')).toBe(true);
  });

  it('exports OTLP/protobuf when asked', async () => {
    const child = await startChild({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_METRICS_EXPORTER: 'none',
    });
    expect(child.started).toBe(true);
    await request(child);
    await stop(child);
    const traceId = Buffer.from(TRACE_ID, 'hex');
    const traces = receiver.protobuf.filter((p) => p.path === '/v1/traces');
    expect(traces.some((p) => p.body.includes(traceId) && p.body.includes(Buffer.from('canopy-test')))).toBe(
      true,
    );
    expect(receiver.protobuf.some((p) => p.path === '/v1/metrics')).toBe(false);
  });

  it('starts nothing, and loads no SDK, without OTEL_* configuration', async () => {
    const child = await startChild({});
    expect(child).toMatchObject({ started: false, sdkLoaded: false });
    const body = await request(child);
    expect(body.log).toEqual({});
    await stop(child);
  });
});
