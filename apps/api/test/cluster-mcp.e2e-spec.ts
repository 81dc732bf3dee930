// A tenant's MCP server on the distributed runtime (an api and a worker process on Postgres and Redis): the worker
// makes the call, with the server's headers opened under the deployment's shared key, and the server's progress
// reaches a client of the api as tool_progress events.

 

import type { ToolResultItem, TurnResultData } from '@canopy/core';
import { Cluster, FakeLlmServer, McpTestServer } from '@canopy/testing';
import { Api, newTenant, SseReader } from './support/api-client';
import { TEST_ENCRYPTION_KEY } from './support/test-app';

let cluster: Cluster;
let fake: FakeLlmServer;
let mcp: McpTestServer;
let api: Api;
let key: string;

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  mcp = await McpTestServer.start();
  cluster = await new Cluster({
    apis: 1,
    workers: 1,
    env: {
      ALLOW_PRIVATE_TARGETS: '127.0.0.1',
      CANOPY_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
      OPENAI_COMPATIBLE_MODELS: 'small',
    },
  }).start();
  ({ api, key } = await newTenant({ url: cluster.api(1) } as never, 'cluster mcp'));
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
  await mcp?.close();
  await fake?.close();
}, 60_000);

it('runs an MCP tool call on the worker, with its headers and progress', async () => {
  const created = await api.post('/v1/mcp-servers', {
    name: 'docs',
    url: mcp.url,
    headers: { Authorization: 'Bearer cluster-secret' },
  });
  expect(created.status).toBe(201);
  const session = await api.post('/v1/sessions', {
    model: 'openai-compatible:small',
    opts: { mcpServers: ['docs'] },
  });
  expect(session.status).toBe(201);
  const id = session.body.id as string;
  const sse = await SseReader.open(`${cluster.api(1)}/v1/sessions/${id}/events?token=${key}`);
  try {
    fake.enqueue({ toolCalls: [{ name: 'docs__progress', input: { steps: 2 } }] }, { text: ['done'] });
    const res = await api.post<TurnResultData>(`/v1/sessions/${id}/prompt`, { content: 'go', wait: true });
    expect(res.body.status).toBe('completed');
    const result = res.body.items.find((i): i is ToolResultItem => i.type === 'tool_result')!;
    expect(result).toMatchObject({ isError: false, value: '2 steps done' });
    const call = mcp.calls.find((c) => c.tool === 'progress')!;
    expect(call.authorization).toBe('Bearer cluster-secret');
    expect(call.meta).toMatchObject({ 'canopy/runId': res.body.runId });
    await sse.waitFor((e) => e.event === 'tool_progress' && e.data.payload?.progress === 2, 10_000);
  } finally {
    sse.close();
  }
}, 60_000);
