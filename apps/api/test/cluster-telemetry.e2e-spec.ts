// OpenTelemetry on the distributed runtime (2 api + 2 worker processes, as deployed: OTEL_* in their environment)
// with a local OTLP/HTTP receiver standing for the collector: ONE trace goes from the prompt's request (its incoming
// traceparent honoured) on an api, through the BullMQ job, to the run on a worker, its model call through the real
// provider path (the AI SDK against a local OpenAI-compatible server) and an MCP tool call, whose request carries the
// trace on to the MCP server. The worker exports the GenAI metrics; the api's log lines of the request carry the
// trace's ids.

import { randomBytes } from 'node:crypto';
import type { TurnResultData } from '@canopy/core';
import {
  Cluster,
  FakeLlmServer,
  McpTestServer,
  OtlpReceiver,
  traceTree,
  type ReceivedSpan,
} from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { TEST_ENCRYPTION_KEY } from './support/test-app';

let cluster: Cluster;
let fake: FakeLlmServer;
let mcp: McpTestServer;
let receiver: OtlpReceiver;
let api: Api;

beforeAll(async () => {
  receiver = await OtlpReceiver.start();
  fake = await FakeLlmServer.start();
  mcp = await McpTestServer.start();
  cluster = await new Cluster({
    apis: 2,
    workers: 2,
    env: {
      ALLOW_PRIVATE_TARGETS: '127.0.0.1',
      CANOPY_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
      OPENAI_COMPATIBLE_MODELS: 'small',
      // The standard variables, as an operator sets them.
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      OTEL_METRIC_EXPORT_INTERVAL: '500',
      // Read by the SDK's batch span processor: export within 200 ms rather than 5 s.
      OTEL_BSP_SCHEDULE_DELAY: '200',
    },
  }).start();
  ({ api } = await newTenant({ url: cluster.api(1) } as never, 'cluster telemetry'));
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await mcp?.close();
  await fake?.close();
  await receiver?.close();
}, 60_000);

/** The chain of a span's ancestors in its trace, nearest first. */
function ancestors(spans: readonly ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const chain: ReceivedSpan[] = [];
  for (let p = byId.get(span.parentSpanId); p; p = byId.get(p.parentSpanId)) chain.push(p);
  return chain;
}

it('one trace from the prompt request through the worker to the model call and an MCP tool call', async () => {
  expect((await api.post('/v1/mcp-servers', { name: 'docs', url: mcp.url })).status).toBe(201);
  const session = await api.post('/v1/sessions', {
    model: 'openai-compatible:small',
    opts: { mcpServers: ['docs'] },
  });
  expect(session.status).toBe(201);
  const id = session.body.id as string;
  fake.enqueue(
    {
      toolCalls: [{ name: 'docs__echo', input: { text: 'traced' } }],
      usage: { inputTokens: 30, outputTokens: 8 },
    },
    { text: ['echoed ', 'back'], usage: { inputTokens: 50, outputTokens: 2 } },
  );

  // The client's own trace: the request continues it.
  const traceId = randomBytes(16).toString('hex');
  const clientSpanId = randomBytes(8).toString('hex');
  const res = await api.request<TurnResultData>(
    'POST',
    `/v1/sessions/${id}/prompt`,
    { content: 'echo something', wait: true },
    { traceparent: `00-${traceId}-${clientSpanId}-01` },
  );
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('completed');

  const spans = await receiver.waitForSpans((all) => {
    const mine = all.filter((s) => s.traceId === traceId);
    const names = new Set(mine.map((s) => s.name));
    if (!mine.some((s) => s.parentSpanId === clientSpanId)) return undefined;
    return ['invoke_agent', 'chat small', 'execute_tool docs__echo', 'canopy.commit'].every((n) =>
      names.has(n),
    ) && mine.filter((s) => s.name === 'chat small').length === 2
      ? mine
      : undefined;
  }, 30_000);
  const tree = traceTree(receiver.spans, traceId);

  // The api's server span of the request: a child of the client's span.
  const server = spans.find((s) => s.kind === 2 && s.parentSpanId === clientSpanId);
  expect({ server: server?.name, tree }).toMatchObject({ server: expect.any(String) });
  expect(server!.service).toBe('canopy-api');
  expect(server!.attributes).toMatchObject({
    'http.route': '/v1/sessions/:id/prompt',
    'http.response.status_code': 200,
  });

  // The run on a worker, in the same trace, under the request.
  const run = spans.find((s) => s.name === 'invoke_agent')!;
  expect(run.service).toBe('canopy-worker');
  expect(ancestors(spans, run)).toContain(server);
  expect(run.attributes).toMatchObject({
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.conversation.id': id,
    'gen_ai.provider.name': 'openai-compatible',
    'gen_ai.request.model': 'small',
    'canopy.run.id': res.body.runId,
    'canopy.run.kind': 'prompt',
    'canopy.run.status': 'completed',
  });

  // Its model calls and its tool call, children of the run.
  const chats = spans.filter((s) => s.name === 'chat small');
  for (const chat of chats) {
    expect(chat.parentSpanId).toBe(run.spanId);
    expect(chat.service).toBe('canopy-worker');
  }
  expect(chats.map((c) => c.attributes['gen_ai.response.finish_reasons'])).toEqual([['tool_call'], ['stop']]);
  expect(
    chats.map((c) => [c.attributes['gen_ai.usage.input_tokens'], c.attributes['gen_ai.usage.output_tokens']]),
  ).toEqual([
    [30, 8],
    [50, 2],
  ]);
  const tool = spans.find((s) => s.name === 'execute_tool docs__echo')!;
  expect(tool.parentSpanId).toBe(run.spanId);
  expect(tool.attributes).toMatchObject({
    'gen_ai.tool.name': 'docs__echo',
    'canopy.tool.kind': 'mcp',
    'canopy.mcp.server': 'docs',
  });
  // The MCP server was called within that span: the request carried it on.
  const call = mcp.calls.find((c) => c.tool === 'echo')!;
  expect(call.traceparent).toBe(`00-${traceId}-${tool.spanId}-01`);
  // The worker's database work is in the trace too (pg instrumented, loaded after the SDK started).
  expect(
    spans.some((s) => s.service === 'canopy-worker' && s.attributes['db.system.name'] === 'postgresql'),
  ).toBe(true);
  expect(tree).toContain('invoke_agent [canopy-worker]');

  // The worker's GenAI metrics went out over OTLP too.
  await receiver.waitForSpans(
    () =>
      receiver.metrics.some((m) => m.service === 'canopy-worker' && m.name === 'gen_ai.client.token.usage'),
    15_000,
  );
  const usage = receiver.metrics.find((m) => m.name === 'gen_ai.client.token.usage')!;
  expect(usage.points.map((p) => p['gen_ai.token.type']).sort()).toEqual(
    expect.arrayContaining(['input', 'output']),
  );
  // No tenant on metrics unless the operator opts in.
  expect(usage.points.every((p) => p['canopy.tenant.id'] === undefined)).toBe(true);

  // The api's log line of the request carries the trace.
  const logs = [...cluster.processes.values()]
    .filter((p) => p.name.startsWith('api'))
    .flatMap((p) => p.output);
  expect(
    logs
      .join('')
      .split('\n')
      .some((l) => l.includes(`"trace_id":"${traceId}"`) && l.includes('/prompt')),
  ).toBe(true);
}, 90_000);
