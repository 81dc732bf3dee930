// An MCP tool call carries the trace context of the tool call that made it (OpenTelemetry on): the `traceparent`
// header of its HTTP request (the pool's fetch is wrapped as AgentModule wraps it) and `_meta.traceparent`, where
// MCP's OpenTelemetry conventions put it. Against a real MCP server made with the official SDK.

import { guardedFetch, TargetPolicy, canopyTracer, currentTraceCarrier, tracingFetch } from '@canopy/common';
import { InMemoryTelemetry, McpTestServer } from '@canopy/testing';
import { McpClientPool, type McpTarget } from './mcp-client-pool';

let telemetry: InMemoryTelemetry;
let server: McpTestServer;
let pool: McpClientPool;

beforeAll(async () => {
  telemetry = InMemoryTelemetry.start();
  server = await McpTestServer.start();
  pool = new McpClientPool({
    fetch: tracingFetch(guardedFetch(TargetPolicy.anywhere, 'MCP server URL')),
    connectTimeoutMs: 5_000,
    idleCloseMs: 60_000,
    clientVersion: 'test',
    onState: () => undefined,
  });
});
afterAll(async () => {
  await pool.close();
  await server.close();
  await telemetry.shutdown();
});

const target = (): McpTarget => ({
  tenantId: '00000000-0000-4000-8000-000000000001',
  serverId: 'srv',
  name: 'tools',
  url: server.url,
  headers: {},
  version: '1',
});

function call(meta: Record<string, unknown>) {
  return pool.callTool(
    target(),
    'echo',
    { text: 'hi' },
    {
      signal: new AbortController().signal,
      timeoutMs: 5_000,
      meta,
      onProgress: () => undefined,
    },
  );
}

it('sends the caller span as traceparent, in the request and in _meta', async () => {
  const span = await canopyTracer().startActiveSpan('execute_tool tools__echo', async (s) => {
    await call({ ...currentTraceCarrier() });
    s.end();
    return s.spanContext();
  });
  const recorded = server.calls.at(-1)!;
  const expected = `00-${span.traceId}-${span.spanId}-01`;
  expect(recorded.traceparent).toBe(expected);
  expect(recorded.meta).toMatchObject({ traceparent: expected });
});

it('sends none outside a trace', async () => {
  await call({ ...currentTraceCarrier() });
  const recorded = server.calls.at(-1)!;
  expect(recorded.traceparent).toBeUndefined();
  expect(recorded.meta?.traceparent).toBeUndefined();
});
