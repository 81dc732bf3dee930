// Canopy's MCP client against an independent peer: the protocol's reference server
// (`@modelcontextprotocol/server-everything`, in its Streamable HTTP mode, as its own process on loopback). A tenant
// saves it; its tools are listed with their schemas; the model's calls of `echo` and `get-sum` come back as tool
// results, and `get-tiny-image` as an image; the run completes.

import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ToolResultItem, TurnResultData } from '@canopy/core';
import { eventually, FakeLlmServer, freePort } from '@canopy/testing';
import { newTenant, type Api } from './support/api-client';
import { childEnv } from './support/child-env';
import { startTestApp, type TestApp } from './support/test-app';

let fake: FakeLlmServer;
let everything: ChildProcess;
let url: string;
let t: TestApp;
let api: Api;

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  const port = await freePort();
  const entry = join(
    dirname(createRequire(__filename).resolve('@modelcontextprotocol/server-everything/package.json')),
    'dist',
    'index.js',
  );
  everything = spawn(process.execPath, [entry, 'streamableHttp'], {
    env: childEnv(tmpdir(), { PORT: String(port) }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  everything.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await eventually(() => expect(output).toContain(`listening on port ${port}`), { timeoutMs: 30_000 });
  url = `http://127.0.0.1:${port}/mcp`;
  t = await startTestApp({
    env: {
      ALLOW_PRIVATE_TARGETS: '127.0.0.1',
      OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
      OPENAI_COMPATIBLE_MODELS: 'small',
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_TENANT: '0',
    },
  });
  ({ api } = await newTenant(t, 'the reference MCP server'));
}, 60_000);

afterAll(async () => {
  await t?.close();
  if (everything && everything.exitCode === null) {
    const exited = new Promise((resolve) => everything.once('exit', resolve));
    everything.kill('SIGTERM');
    await exited;
  }
  await fake?.close();
});

it('lists the reference server’s tools and calls them from a run', async () => {
  const created = await api.post('/v1/mcp-servers', { name: 'everything', url });
  expect(created.status).toBe(201);
  const state = (await api.get(`/v1/mcp-servers/${created.body.id as string}`)).body;
  const tools = state.tools as Array<{ name: string; inputSchema: { properties?: Record<string, unknown> } }>;
  expect(tools.map((tool) => tool.name)).toEqual(
    expect.arrayContaining(['echo', 'get-sum', 'get-tiny-image']),
  );
  expect(Object.keys(tools.find((tool) => tool.name === 'get-sum')!.inputSchema.properties ?? {})).toEqual([
    'a',
    'b',
  ]);
  expect(state.lastError ?? null).toBeNull();

  const session = await api.post('/v1/sessions', {
    model: 'openai-compatible:small',
    opts: { mcpServers: ['everything'] },
  });
  expect(session.status).toBe(201);
  // The model sees each tool as <server>__<tool>.
  const listed = (await api.get('/v1/tools')).body.data as Array<{ name: string }>;
  expect(listed.map((tool) => tool.name)).toEqual(expect.arrayContaining(['everything__echo']));

  fake.enqueue(
    {
      toolCalls: [
        { name: 'everything__echo', input: { message: 'through the reference server' } },
        { name: 'everything__get-sum', input: { a: 19, b: 23 } },
        { name: 'everything__get-tiny-image', input: {} },
      ],
    },
    { text: ['done'] },
  );
  const done = await api.post<TurnResultData>(`/v1/sessions/${session.body.id as string}/prompt`, {
    content: 'use the tools',
    wait: true,
  });
  expect(done.body.status).toBe('completed');
  expect(done.body.finalResponse).toBe('done');
  const results = done.body.items.filter((i): i is ToolResultItem => i.type === 'tool_result');
  expect(results).toHaveLength(3);
  expect(results.every((r) => !r.isError)).toBe(true);
  expect(JSON.stringify(results[0]!.value)).toContain('through the reference server');
  expect(JSON.stringify(results[1]!.value)).toContain('42');
  // The tool results went back to the model in its next request.
  const followUp = JSON.stringify(fake.requests.at(-1)!.body);
  expect(followUp).toContain('through the reference server');
  expect(followUp).toContain('42');
});
