// A tenant's MCP servers as tools for its agents, over HTTP on the single-process runtime, against a real MCP
// server made with the official SDK on loopback and the local fake provider scripting the model's tool calls: the
// servers' routes (headers never returned), GET /v1/tools, a call with its _meta and progress, a failing, a slow
// (timed out, then cancelled) and a down server, garbage answers, a list change, approval, a user's own
// credentials, and the older HTTP+SSE transport.

/* eslint-disable @typescript-eslint/no-unsafe-call -- JSON bodies read loosely */

import type { ToolResultItem, TurnResultData } from '@canopy/core';
import { eventually, FakeLlmServer, McpTestServer } from '@canopy/testing';
import { newTenant, SseReader, type Api } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

const MODEL = 'openai-compatible:small';

let t: TestApp;
let fake: FakeLlmServer;
let mcp: McpTestServer;
let api: Api;
let key: string;
let tenantId: string;
let docsId: string;

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  mcp = await McpTestServer.start();
  t = await startTestApp({
    env: {
      ALLOW_PRIVATE_TARGETS: '127.0.0.1',
      OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
      OPENAI_COMPATIBLE_MODELS: 'small',
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_TENANT: '0',
    },
  });
  ({ api, key, tenantId } = await newTenant(t, 'mcp'));
  const created = await api.post('/v1/mcp-servers', {
    name: 'docs',
    url: mcp.url,
    headers: { Authorization: 'Bearer tenant-secret' },
  });
  expect(created.status).toBe(201);
  docsId = created.body.id as string;
});

afterAll(async () => {
  await t?.close();
  await mcp?.close();
  await fake?.close();
});

/** A session on the scripted model with the given MCP servers. */
async function session(mcpServers: string[], extra: Record<string, unknown> = {}): Promise<string> {
  const res = await api.post('/v1/sessions', { model: MODEL, opts: { mcpServers }, ...extra });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** Scripts one tool call then a closing text, prompts and waits for the result. */
async function callTool(id: string, name: string, input: Record<string, unknown>): Promise<TurnResultData> {
  fake.enqueue({ toolCalls: [{ name, input }] }, { text: ['done'] });
  const res = await api.post<TurnResultData>(`/v1/sessions/${id}/prompt`, { content: 'go', wait: true });
  expect(res.status).toBe(200);
  return res.body;
}

const resultOf = (r: TurnResultData) => r.items.find((i): i is ToolResultItem => i.type === 'tool_result')!;

describe('the routes', () => {
  it('stores a server without ever answering its headers, and shows its state', async () => {
    const got = await api.get(`/v1/mcp-servers/${docsId}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      name: 'docs',
      url: mcp.url,
      headerNames: ['Authorization'],
      approval: 'never',
      enabled: true,
      lastError: null,
    });
    expect(got.body.lastReachedAt).toEqual(expect.any(String));
    const names = (got.body.tools as Array<{ name: string }>).map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['echo', 'progress', 'slow', 'fail', 'whoami']));
    expect(got.body.tools.find((tool: { name: string }) => tool.name === 'echo').inputSchema).toMatchObject({
      properties: { text: { type: 'string' } },
    });
    const listed = await api.get('/v1/mcp-servers');
    const audit = await api.get('/v1/audit?action=mcp_server.');
    for (const body of [got.body, listed.body, audit.body])
      expect(JSON.stringify(body)).not.toContain('tenant-secret');
    expect(audit.body.data.length).toBeGreaterThan(0);
  });

  it('refuses a second server of the same name (409) and a bad name (400 on name)', async () => {
    const twice = await api.post('/v1/mcp-servers', { name: 'docs', url: mcp.url });
    expect(twice.status).toBe(409);
    const bad = await api.post('/v1/mcp-servers', { name: 'Has Spaces', url: mcp.url });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('name');
  });

  it('lists the tenant’s MCP tools in GET /v1/tools, named <server>__<tool> with their schemas', async () => {
    const tools = (await api.get('/v1/tools')).body.data as Array<Record<string, unknown>>;
    expect(tools.find((tool) => tool.name === 'docs__echo')).toMatchObject({
      server: 'docs',
      approval: false,
      inputSchema: { properties: { text: { type: 'string' } } },
    });
    const other = await newTenant(t, 'no mcp');
    const theirs = (await other.api.get('/v1/tools')).body.data as Array<Record<string, unknown>>;
    expect(theirs.some((tool) => tool.server !== undefined)).toBe(false);
  });

  it('answers 400 naming opts.mcpServers for a server the tenant does not have', async () => {
    const res = await api.post('/v1/sessions', { model: MODEL, opts: { mcpServers: ['nope'] } });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toMatchObject({ field: 'opts.mcpServers' });
  });
});

describe('a run', () => {
  it('calls the tool with the scope and an idempotency key in _meta and the server’s headers', async () => {
    const id = await session(['docs']);
    const before = fake.requests.length;
    const result = await callTool(id, 'docs__echo', { text: 'hi' });
    expect(result.status).toBe('completed');
    expect(resultOf(result)).toMatchObject({ isError: false, value: 'echo: hi' });
    // The model was offered the tool with the server's input schema.
    const tools = JSON.stringify(fake.requests[before]!.body.tools);
    expect(tools).toContain('docs__echo');
    const call = mcp.calls.filter((c) => c.tool === 'echo').at(-1)!;
    expect(call.authorization).toBe('Bearer tenant-secret');
    expect(call.meta).toMatchObject({
      'canopy/tenantId': tenantId,
      'canopy/sessionId': id,
      'canopy/runId': result.runId,
      'canopy/idempotencyKey': `${result.runId}:${resultOf(result).toolId}`,
    });
  });

  it('streams the server’s progress notifications as tool_progress events', async () => {
    const id = await session(['docs']);
    const sse = await SseReader.open(`${t.url}/v1/sessions/${id}/events?token=${key}`);
    try {
      const result = await callTool(id, 'docs__progress', { steps: 3 });
      expect(resultOf(result)).toMatchObject({ isError: false, value: '3 steps done' });
      await sse.waitFor((e) => e.event === 'tool_progress' && e.data.payload?.progress === 3);
      const progress = sse.events
        .filter((e) => e.event === 'tool_progress')
        .map((e) => e.data.payload as unknown);
      expect(progress).toEqual([
        { progress: 1, total: 3, message: 'step 1' },
        { progress: 2, total: 3, message: 'step 2' },
        { progress: 3, total: 3, message: 'step 3' },
      ]);
    } finally {
      sse.close();
    }
  });

  it('answers a failing tool as an error result, and images and resource links as its content', async () => {
    const id = await session(['docs']);
    const failed = await callTool(id, 'docs__fail', {});
    expect(failed.status).toBe('completed');
    expect(resultOf(failed).isError).toBe(true);
    expect(resultOf(failed).value).toContain('the disk is full');
    const before = fake.requests.length;
    const picture = await callTool(id, 'docs__picture', {});
    expect(resultOf(picture).isError).toBe(false);
    const sent = JSON.stringify(fake.requests[before + 1]!.body.messages);
    expect(sent).toContain('readme.md');
  });

  it('times a slow call out with an error result, cancelling it on the server', async () => {
    const slow = await api.post('/v1/mcp-servers', { name: 'slowpoke', url: mcp.url, timeoutMs: 300 });
    expect(slow.status).toBe(201);
    const id = await session(['slowpoke']);
    const cancelledBefore = mcp.cancelled.length;
    const result = await callTool(id, 'slowpoke__slow', { ms: 20_000 });
    expect(result.status).toBe('completed');
    expect(resultOf(result)).toMatchObject({ isError: true });
    expect(resultOf(result).value).toContain('timed out after 300 ms');
    await eventually(() => expect(mcp.cancelled.length).toBeGreaterThan(cancelledBefore));
  });

  it('cancels the call on the server when the run is cancelled', async () => {
    const id = await session(['docs']);
    const cancelledBefore = mcp.cancelled.length;
    const callsBefore = mcp.calls.length;
    // One reply: the cancelled run never asks for a second.
    fake.enqueue({ toolCalls: [{ name: 'docs__slow', input: { ms: 20_000 } }] });
    const started = await api.post(`/v1/sessions/${id}/prompt`, { content: 'go' });
    expect(started.status).toBe(202);
    await eventually(() => expect(mcp.calls.length).toBeGreaterThan(callsBefore));
    expect((await api.post(`/v1/sessions/${id}/cancel`, {})).status).toBeLessThan(300);
    await eventually(() => expect(mcp.cancelled.length).toBeGreaterThan(cancelledBefore));
    await eventually(async () => expect((await api.get(`/v1/sessions/${id}`)).body.status).toBe('idle'));
  });

  it('gives the model an error result when the server answers garbage, and the run goes on', async () => {
    const id = await session(['docs']);
    mcp.garbageCalls = true;
    try {
      const result = await callTool(id, 'docs__echo', { text: 'x' });
      expect(result.status).toBe('completed');
      expect(resultOf(result).isError).toBe(true);
      expect(resultOf(result).value).toContain('MCP server "docs" failed');
    } finally {
      mcp.garbageCalls = false;
    }
    // The next call works again.
    expect(resultOf(await callTool(id, 'docs__echo', { text: 'y' })).value).toBe('echo: y');
  });

  it('gives the model an error result when the server is down, offering the tools it listed last', async () => {
    const other = await McpTestServer.start();
    const created = await api.post('/v1/mcp-servers', { name: 'gone', url: other.url });
    expect((await api.get(`/v1/mcp-servers/${created.body.id}`)).body.tools.length).toBeGreaterThan(0);
    await other.close();
    const id = await session(['gone']);
    const result = await callTool(id, 'gone__echo', { text: 'x' });
    expect(result.status).toBe('completed');
    expect(resultOf(result).isError).toBe(true);
    expect(resultOf(result).value).toContain('MCP server "gone" failed');
    const state = await api.get(`/v1/mcp-servers/${created.body.id}`);
    expect(state.body.lastError).toEqual(expect.any(String));
  });

  it('records a server that answers garbage to everything as its last error', async () => {
    const created = await api.post('/v1/mcp-servers', { name: 'junk', url: mcp.garbageUrl });
    const state = await api.get(`/v1/mcp-servers/${created.body.id}`);
    expect(state.status).toBe(200);
    expect(state.body).toMatchObject({ tools: null, lastReachedAt: null });
    expect(state.body.lastError).toEqual(expect.any(String));
  });

  it('offers a tool the server adds once it says its list changed', async () => {
    const id = await session(['docs']);
    await callTool(id, 'docs__grow', {});
    await eventually(async () => {
      const tools = (await api.get('/v1/tools')).body.data as Array<{ name: string }>;
      expect(tools.map((tool) => tool.name)).toContain('docs__extra');
    });
    expect(resultOf(await callTool(id, 'docs__extra', {})).value).toBe('extra');
  });

  it('pauses for approval as approval server tools do, then runs the call once executed', async () => {
    const created = await api.post('/v1/mcp-servers', {
      name: 'guarded',
      url: mcp.url,
      approval: { echo: 'always' },
    });
    expect(created.status).toBe(201);
    const id = await session(['guarded']);
    fake.enqueue({ toolCalls: [{ name: 'guarded__echo', input: { text: 'careful' } }] }, { text: ['done'] });
    const paused = await api.post<TurnResultData>(`/v1/sessions/${id}/prompt`, { content: 'go', wait: true });
    expect(paused.body.status).toBe('paused');
    expect(paused.body.awaiting[0]).toMatchObject({ toolName: 'guarded__echo' });
    const done = await api.post<TurnResultData>(`/v1/sessions/${id}/resume`, {
      decision: { type: 'execute' },
      wait: true,
    });
    expect(done.body.status).toBe('completed');
    expect(resultOf(done.body)).toMatchObject({ isError: false, value: 'echo: careful' });
  });

  it('uses the session user’s own credentials, and tells the model when the user has none', async () => {
    const created = await api.post('/v1/mcp-servers', { name: 'acct', url: mcp.url, userCredentials: true });
    const put = await api.request('PUT', `/v1/users/u1/mcp-servers/${created.body.id}/credentials`, {
      headers: { Authorization: 'Bearer u1-token' },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ userId: 'u1', headerNames: ['Authorization'] });
    expect(JSON.stringify(put.body)).not.toContain('u1-token');

    const mine = await session(['acct'], { userId: 'u1' });
    expect(resultOf(await callTool(mine, 'acct__whoami', {})).value).toBe('Bearer u1-token');
    const theirs = await session(['acct'], { userId: 'u2' });
    const refused = resultOf(await callTool(theirs, 'acct__whoami', {}));
    expect(refused.isError).toBe(true);
    expect(refused.value).toContain('the user "u2" has not connected the MCP server "acct"');
  });

  it('falls back to the older HTTP+SSE transport for a server that only has it', async () => {
    const created = await api.post('/v1/mcp-servers', { name: 'legacy', url: mcp.sseUrl });
    expect(created.status).toBe(201);
    const id = await session(['legacy']);
    const opened = mcp.sessions;
    expect(resultOf(await callTool(id, 'legacy__echo', { text: 'old' })).value).toBe('echo: old');
    // The SSE client is pooled like any other: a second run reuses it (no new MCP session), and the app's shutdown
    // closes it (a client left out of the pool kept its EventSource reconnecting, and jest from exiting).
    const afterFirst = mcp.sessions;
    expect(afterFirst).toBeGreaterThan(opened);
    expect(resultOf(await callTool(id, 'legacy__echo', { text: 'again' })).value).toBe('echo: again');
    expect(mcp.sessions).toBe(afterFirst);
  });
});
