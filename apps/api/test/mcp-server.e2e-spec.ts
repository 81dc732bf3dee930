// Canopy as an MCP server, spoken to by the official SDK's Client over Streamable HTTP: the four tools, a session
// created, prompted (mock:echo), found and read back; a user token sees only its user's sessions, another tenant's
// key gets not found, bad input is an error (never a 500) and no credential gets 401.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Api, newTenant } from './support/api-client';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';

let t: TestApp;
let api: Api;
let key: string;
let otherKey: string;
const clients: Client[] = [];

beforeAll(async () => {
  t = await startTestApp();
  ({ api, key } = await newTenant(t, 'mcp-server'));
  ({ key: otherKey } = await newTenant(t, 'mcp-server-other'));
});

afterAll(async () => {
  for (const client of clients) await client.close();
  await t?.close();
});

async function connect(credential: string): Promise<Client> {
  const client = new Client({ name: 'canopy-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/v1/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${credential}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
}

async function token(userId: string): Promise<string> {
  const minted = await api.post('/v1/tokens', { userId });
  expect(minted.status).toBe(201);
  return minted.body.token as string;
}

describe('Canopy as an MCP server', () => {
  let sessionId: string;

  it('lists its four tools', async () => {
    const client = await connect(key);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'create_session',
      'get_conversation',
      'prompt_session',
      'search_conversations',
    ]);
    const prompt = tools.find((tool) => tool.name === 'prompt_session')!;
    expect(prompt.inputSchema.required).toEqual(['sessionId', 'content']);
  });

  it('creates a session, prompts it, finds it and reads it back', async () => {
    const client = await connect(key);
    const created = await call(client, 'create_session', {
      model: 'mock:echo',
      title: 'lighthouse',
      system: 'be brief',
    });
    expect(created.isError).toBeFalsy();
    sessionId = (created.structuredContent as { sessionId: string }).sessionId;
    expect(typeof sessionId).toBe('string');
    const rest = await api.get(`/v1/sessions/${sessionId}`);
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({ title: 'lighthouse', model: 'mock:echo', system: 'be brief' });

    const replied = await call(client, 'prompt_session', { sessionId, content: 'keepers of the lamp' });
    expect(replied.isError).toBeFalsy();
    expect(textOf(replied)).toBe('Echo: keepers of the lamp');
    const { runId, status } = replied.structuredContent as { runId: string; status: string };
    expect(status).toBe('completed');
    expect((await api.get(`/v1/runs/${runId}`)).body).toMatchObject({ id: runId, status: 'completed' });

    const started = await call(client, 'prompt_session', { sessionId, content: 'second lamp', wait: false });
    expect(started.isError).toBeFalsy();
    const second = (started.structuredContent as { runId: string }).runId;
    expect(second).not.toBe(runId);

    const found = await call(client, 'search_conversations', { query: 'keepers lamp', limit: 5 });
    expect(found.isError).toBeFalsy();
    const hits = (JSON.parse(textOf(found)) as { data: Array<{ session: { id: string } }> }).data;
    expect(hits.map((h) => h.session.id)).toEqual([sessionId]);

    const read = await call(client, 'get_conversation', { sessionId });
    expect(read.isError).toBeFalsy();
    const rest2 = await api.get(`/v1/sessions/${sessionId}/turns`);
    expect(JSON.parse(textOf(read))).toEqual({ data: rest2.body.data });
    expect(JSON.stringify(rest2.body.data)).toContain('Echo: keepers of the lamp');
  });

  it('shows a user token only its own sessions', async () => {
    const alice = await connect(await token('alice'));
    const mine = await call(alice, 'create_session', { model: 'mock:echo', title: 'alice notes' });
    const hers = (mine.structuredContent as { sessionId: string }).sessionId;
    expect((await api.get(`/v1/sessions/${hers}`)).body.userId).toBe('alice');
    await call(alice, 'prompt_session', { sessionId: hers, content: 'keepers of the garden' });

    const found = await call(alice, 'search_conversations', { query: 'keepers' });
    const ids = (JSON.parse(textOf(found)) as { data: Array<{ session: { id: string } }> }).data.map(
      (h) => h.session.id,
    );
    expect(ids).toEqual([hers]);

    const mallory = await connect(await token('mallory'));
    for (const [tool, args] of [
      ['get_conversation', { sessionId: hers }],
      ['prompt_session', { sessionId: hers, content: 'pwned' }],
    ] as const) {
      const denied = await call(mallory, tool, args);
      expect(denied.isError).toBe(true);
      expect(textOf(denied)).toMatch(/not_found: .*not found/);
      expect(textOf(denied)).not.toContain('garden');
    }
    const nothing = await call(mallory, 'search_conversations', { query: 'keepers' });
    expect(JSON.parse(textOf(nothing))).toEqual({ data: [], nextCursor: null });
  });

  it('answers another tenant’s key not found, never the content', async () => {
    const other = await connect(otherKey);
    const read = await call(other, 'get_conversation', { sessionId });
    expect(read.isError).toBe(true);
    expect(textOf(read)).toMatch(/not_found: .*not found/);
    expect(textOf(read)).not.toContain('keepers');
    const prompt = await call(other, 'prompt_session', { sessionId, content: 'pwned' });
    expect(prompt.isError).toBe(true);
    expect(textOf(prompt)).toMatch(/not found/);
    const found = await call(other, 'search_conversations', { query: 'keepers' });
    expect(JSON.parse(textOf(found))).toEqual({ data: [], nextCursor: null });
    // Its session is untouched: the foreign prompt started no run.
    const turns = await api.get(`/v1/sessions/${sessionId}/turns`);
    expect(JSON.stringify(turns.body.data)).not.toContain('pwned');
  });

  it('refuses bad input as an error, never a 500', async () => {
    const client = await connect(key);
    const cases: Array<[string, Record<string, unknown>]> = [
      ['search_conversations', {}],
      ['search_conversations', { query: 'x', limit: 0 }],
      ['get_conversation', { sessionId: 42 }],
      ['prompt_session', { sessionId: 'abc', content: '' }],
      ['create_session', { model: 'x' }],
      ['create_session', { model: 'nobody:model' }],
    ];
    for (const [name, args] of cases) {
      let failed: boolean;
      try {
        failed = (await call(client, name, args)).isError === true;
      } catch (err) {
        // A JSON-RPC error (invalid params) is as good as a tool error; an HTTP failure is not.
        failed = err instanceof McpError;
      }
      expect([name, args, failed]).toEqual([name, args, true]);
    }
    // No model named, and this deployment has no provider: the default is asked for, not guessed.
    const unnamed = await call(client, 'create_session', {});
    expect(unnamed.isError).toBe(true);
    expect(textOf(unnamed)).toMatch(/bad_request: no provider model is configured/);
    const unknown = await call(client, 'no_such_tool', {}).then(
      (r) => r.isError === true,
      (err) => err instanceof McpError,
    );
    expect(unknown).toBe(true);
    // Not JSON-RPC at all: a client error.
    const garbage = await api.request(
      'POST',
      '/v1/mcp',
      { hello: 'world' },
      {
        accept: 'application/json, text/event-stream',
      },
    );
    expect(garbage.status).toBeGreaterThanOrEqual(400);
    expect(garbage.status).toBeLessThan(500);
  });

  it('answers 401 without a credential, 403 to the admin key, and 405 to GET and DELETE', async () => {
    const anonymous = new Client({ name: 'anonymous', version: '1.0.0' });
    await expect(
      anonymous.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/v1/mcp`))),
    ).rejects.toMatchObject({ code: 401 });
    const bare = await api.as(undefined).post('/v1/mcp', {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
    });
    expect(bare.status).toBe(401);
    expect(bare.body.error.code).toBe('unauthorized');
    // The admin key has no tenant: no conversations to serve.
    const admin = await new Api(t.url, TEST_ADMIN_KEY).post('/v1/mcp', {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
    });
    expect(admin.status).toBe(403);
    expect(admin.body.error.code).toBe('forbidden');
    expect((await api.get('/v1/mcp')).status).toBe(405);
    expect((await api.delete('/v1/mcp')).status).toBe(405);
  });
});
