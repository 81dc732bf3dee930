// An MCP server's URL is checked on every connection, not only when it is saved: a server saved on loopback while the
// operator allowed it (ALLOW_PRIVATE_TARGETS) is refused at connect once the deployment restarts without the
// allowance. The run goes on: the model's call of its tool answers an error result that says the address was
// refused, and the real MCP server (the official SDK's, on loopback) receives no request at all.

/* eslint-disable @typescript-eslint/no-unsafe-call -- JSON bodies read loosely */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ToolResultItem, TurnResultData } from '@canopy/core';
import { FakeLlmServer, McpTestServer } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

let dataDir: string;
let fake: FakeLlmServer;
let mcp: McpTestServer;
let app: TestApp | undefined;

/** Boots the api on the same embedded database, with the deployment's provider on the fake. */
async function boot(env: Record<string, string>): Promise<TestApp> {
  await app?.close();
  app = undefined;
  app = await startTestApp({
    embeddedDataDir: dataDir,
    env: { OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl, OPENAI_COMPATIBLE_MODELS: 'small', ...env },
  });
  return app;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'canopy-mcp-ssrf-'));
  fake = await FakeLlmServer.start();
  mcp = await McpTestServer.start();
});

afterAll(async () => {
  await app?.close();
  await mcp?.close();
  await fake?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it('refuses a server saved on loopback once the operator no longer allows it: an error result, no request sent', async () => {
  // Allowed: saved, reached, its tools listed.
  const first = await boot({ ALLOW_PRIVATE_TARGETS: '127.0.0.1' });
  const tenant = await newTenant(first, 'mcp refused at connect');
  const created = await tenant.api.post('/v1/mcp-servers', { name: 'docs', url: mcp.url });
  expect(created.status).toBe(201);
  const listed = await tenant.api.get(`/v1/mcp-servers/${created.body.id as string}`);
  expect(listed.body.tools.map((tool: { name: string }) => tool.name)).toContain('echo');
  expect(mcp.requests).toBeGreaterThan(0);

  // Restarted without the allowance: the saved URL stays, every connection to it is refused.
  const strict = await boot({});
  const api = new Api(strict.url, tenant.key);
  const requestsBefore = mcp.requests;
  const session = await api.post('/v1/sessions', {
    model: 'openai-compatible:small',
    opts: { mcpServers: ['docs'] },
  });
  expect(session.status).toBe(201);
  fake.enqueue({ toolCalls: [{ name: 'docs__echo', input: { text: 'leak' } }] }, { text: ['done'] });
  const done = await api.post<TurnResultData>(`/v1/sessions/${session.body.id as string}/prompt`, {
    content: 'go',
    wait: true,
  });
  expect(done.body.status).toBe('completed');
  const result = done.body.items.find((i): i is ToolResultItem => i.type === 'tool_result')!;
  expect(result.isError).toBe(true);
  expect(result.value).toContain(
    'MCP server URL refused: 127.0.0.1 is a loopback, private, link-local or reserved address',
  );
  expect(mcp.requests).toBe(requestsBefore);
  expect(mcp.calls).toEqual([]);
  const state = await api.get(`/v1/mcp-servers/${created.body.id as string}`);
  expect(state.body.lastError).toContain('MCP server URL refused');
  expect(mcp.requests).toBe(requestsBefore);
});
