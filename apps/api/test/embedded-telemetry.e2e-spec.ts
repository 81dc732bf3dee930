// OpenTelemetry on the embedded runtime: the built api started as `npm start` starts it (the embedded database, the
// in-process queue), with the standard OTEL_* variables pointing at a local OTLP/HTTP receiver: a prompt's request
// (its incoming traceparent continued) is the parent of the run's invoke_agent span, with the model call, the
// server tool call and the commit under it, and the statements to the embedded database (pg instrumented).

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TurnResultData } from '@canopy/core';
import { OtlpReceiver, TEST_ADMIN_KEY, eventually, freePort } from '@canopy/testing';
import { newTenant } from './support/api-client';
import { childEnv } from './support/child-env';

const ROOT = resolve(__dirname, '../../..');
const API_MAIN = join(ROOT, 'dist/apps/api/apps/api/src/main.js');

let receiver: OtlpReceiver;
let proc: ChildProcess;
let dir: string;
let url: string;
const output: string[] = [];

beforeAll(async () => {
  receiver = await OtlpReceiver.start();
  dir = mkdtempSync(join(tmpdir(), 'canopy-otel-'));
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  proc = spawn(process.execPath, [API_MAIN], {
    cwd: dir,
    env: childEnv(dir, {
      PORT: String(port),
      HOST: '127.0.0.1',
      CANOPY_MIGRATIONS_DIR: join(ROOT, 'prisma/migrations'),
      CANOPY_ADMIN_KEY: TEST_ADMIN_KEY,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'canopy-embedded',
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_BSP_SCHEDULE_DELAY: '200',
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
  proc.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
  await eventually(
    async () => {
      if (proc.exitCode !== null) throw new Error(`the api exited:\n${output.join('')}`);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
    },
    { timeoutMs: 180_000, intervalMs: 200 },
  );
}, 240_000);

afterAll(async () => {
  if (proc && proc.exitCode === null) {
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
  await receiver?.close();
}, 60_000);

it("continues the request's trace into the run, its model call, its tool call and its commit", async () => {
  const { api } = await newTenant({ url } as never, 'embedded telemetry');
  const session = await api.post('/v1/sessions', {
    model: 'mock:script',
    opts: {
      script: [{ toolCalls: [{ name: 'calculator', input: { expression: '6 * 7' } }] }, { text: '42' }],
      serverTools: ['calculator'],
    },
  });
  expect(session.status).toBe(201);
  const traceId = randomBytes(16).toString('hex');
  const clientSpanId = randomBytes(8).toString('hex');
  const res = await api.request<TurnResultData>(
    'POST',
    `/v1/sessions/${session.body.id as string}/prompt`,
    { content: 'six times seven', wait: true },
    { traceparent: `00-${traceId}-${clientSpanId}-01` },
  );
  expect(res.body.status).toBe('completed');
  const spans = await receiver.waitForSpans((all) => {
    const mine = all.filter((s) => s.traceId === traceId);
    return mine.some((s) => s.parentSpanId === clientSpanId) && mine.some((s) => s.name === 'canopy.commit')
      ? mine
      : undefined;
  }, 30_000);
  const server = spans.find((s) => s.parentSpanId === clientSpanId)!;
  expect(server).toMatchObject({ kind: 2, service: 'canopy-embedded' });
  const run = spans.find((s) => s.name === 'invoke_agent')!;
  expect(run.attributes).toMatchObject({
    'canopy.run.id': res.body.runId,
    'gen_ai.conversation.id': session.body.id,
  });
  // The run is under the request (through the in-process queue).
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  let up = byId.get(run.parentSpanId);
  while (up && up !== server) up = byId.get(up.parentSpanId);
  expect(up).toBe(server);
  const children = spans.filter((s) => s.parentSpanId === run.spanId).map((s) => s.name);
  expect(children).toEqual(
    expect.arrayContaining(['chat script', 'execute_tool calculator', 'canopy.commit']),
  );
  expect(spans.find((s) => s.name === 'execute_tool calculator')!.attributes['canopy.tool.kind']).toBe(
    'server',
  );
  // Statements to the embedded database are in the trace (pg talks to it over its local socket).
  expect(spans.some((s) => s.attributes['db.system.name'] === 'postgresql')).toBe(true);
}, 120_000);
