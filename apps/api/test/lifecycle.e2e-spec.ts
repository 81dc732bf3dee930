// A tenant's whole life over the public HTTP API, against the real app and its Postgres: the admin creates the
// tenant and its keys, the tenant creates, lists and pages sessions, holds conversations with the built-in mock
// models, branches and navigates the tree, answers a client tool, changes settings, lets a user token act for one
// end user, cancels a slow run, and finally closes and deletes. Every answer is checked against API.md's shapes.

import type { Message, ToolUseBlock } from '@canopy/core';
import { eventually } from '@canopy/testing';
import { Api, newTenant, type ApiResponse } from './support/api-client';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';
import type { Page, RunView, Session, SessionDetail, TreeView, Turn, TurnResult } from './support/views';

let t: TestApp;
let admin: Api;

beforeAll(async () => {
  t = await startTestApp();
  admin = new Api(t.url, TEST_ADMIN_KEY);
});

afterAll(async () => {
  await t?.close();
});

const SESSION_KEYS = [
  'context',
  'createdAt',
  'id',
  'metadata',
  'model',
  'opts',
  'pinned',
  'status',
  'system',
  'title',
  'tools',
  'updatedAt',
  'userId',
];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const usageShape = {
  inputTokens: expect.any(Number),
  outputTokens: expect.any(Number),
  totalTokens: expect.any(Number),
};

function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: {
      error: expect.objectContaining({ code, message: expect.any(String) }),
      requestId: expect.any(String),
    },
  });
}

function expectSession(body: unknown): void {
  expect(Object.keys(body as object).sort()).toEqual(SESSION_KEYS);
  expect(body).toMatchObject({
    id: expect.any(String),
    model: expect.any(String),
    opts: expect.any(Object),
    tools: expect.any(Array),
    metadata: expect.any(Object),
    status: expect.stringMatching(/^(idle|busy|paused)$/),
    createdAt: expect.stringMatching(ISO),
    updatedAt: expect.stringMatching(ISO),
  });
}

async function createSession(api: Api, body: Record<string, unknown> = {}): Promise<Session> {
  const res = await api.post<Session>('/v1/sessions', { model: 'mock:echo', ...body });
  if (res.status !== 201)
    throw new Error(`session creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Polls GET /v1/runs/:runId until the run reaches `status`; answers the run. */
async function runReaching(api: Api, runId: string, status: string, timeoutMs = 10_000): Promise<RunView> {
  return eventually(
    async () => {
      const res = await api.get<RunView>(`/v1/runs/${runId}`);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe(status);
      return res.body;
    },
    { timeoutMs },
  );
}

async function sessionReaching(api: Api, id: string, status: string): Promise<SessionDetail> {
  return eventually(async () => {
    const res = await api.get<SessionDetail>(`/v1/sessions/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe(status);
    return res.body;
  });
}

describe('the admin creates a tenant and its keys', () => {
  it('shows a new tenant’s API key once, and a second key that acts for the same tenant', async () => {
    const created = await admin.post('/v1/admin/tenants', { name: 'Acme' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(UUID),
      name: 'Acme',
      apiKey: expect.any(String),
    });
    expect(created.body.apiKey).toMatch(/^ck_[A-Za-z0-9_-]{40,}$/);
    const first = new Api(t.url, created.body.apiKey);

    const key = await admin.post(`/v1/admin/tenants/${created.body.id}/keys`, { name: 'ci' });
    expect(key.status).toBe(201);
    expect(key.body).toEqual({
      id: expect.stringMatching(UUID),
      apiKey: expect.stringMatching(/^ck_/),
      prefix: expect.stringMatching(/^ck_/),
      name: 'ci',
      expiresAt: null,
    });
    expect(key.body.apiKey).not.toBe(created.body.apiKey);
    const second = new Api(t.url, key.body.apiKey);

    expect(await first.get<Page>('/v1/sessions')).toMatchObject({
      status: 200,
      body: { data: [], nextCursor: null },
    });
    const session = await createSession(first, { title: 'made with the first key' });
    const seen = await second.get<SessionDetail>(`/v1/sessions/${session.id}`);
    expect(seen.status).toBe(200);
    expect(seen.body.title).toBe('made with the first key');

    // A key is not the admin; no credential is nobody; a revoked key stops working at once.
    expectError(await first.post('/v1/admin/tenants', { name: 'nope' }), 403, 'forbidden');
    expectError(await first.as(undefined).get<Page>('/v1/sessions'), 401, 'unauthorized');
    expectError(
      await admin.post('/v1/admin/tenants/00000000-0000-4000-8000-000000000000/keys'),
      404,
      'not_found',
    );
    expect((await admin.delete(`/v1/admin/keys/${key.body.id}`)).status).toBe(204);
    expectError(await second.get<Page>('/v1/sessions'), 401, 'unauthorized');
    expect((await first.get<Page>('/v1/sessions')).status).toBe(200);
  });
});

describe('sessions: create, read, list', () => {
  let api: Api;

  beforeAll(async () => {
    ({ api } = await newTenant(t, 'sessions'));
  });

  it('creates a session with an auto id (22 url-safe base64 characters) and the Session shape', async () => {
    const res = await api.post('/v1/sessions', {
      model: 'mock:echo',
      title: 'Hello',
      system: 'Be brief.',
      opts: { temperature: 0.2 },
      metadata: { project: 'apollo', priority: 2 },
    });
    expect(res.status).toBe(201);
    expectSession(res.body);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      title: 'Hello',
      model: 'mock:echo',
      system: 'Be brief.',
      opts: { temperature: 0.2 },
      tools: [],
      metadata: { project: 'apollo', priority: 2 },
      userId: null,
      status: 'idle',
    });

    const detail = await api.get(`/v1/sessions/${res.body.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toEqual({
      ...res.body,
      head: null,
      path: [],
      usage: expect.objectContaining(usageShape),
      queued: [],
    });
    expect(detail.body).not.toHaveProperty('inFlight');
  });

  it('creates a session with an explicit id, and refuses the same id again with already_exists', async () => {
    const res = await api.post('/v1/sessions', { id: 'support-ticket-42', model: 'mock:echo' });
    expect(res.status).toBe(201);
    expectSession(res.body);
    expect(res.body.id).toBe('support-ticket-42');
    expectError(
      await api.post('/v1/sessions', { id: 'support-ticket-42', model: 'mock:echo' }),
      409,
      'already_exists',
    );
    expectError(await api.get('/v1/sessions/no-such-session'), 404, 'not_found');
  });

  it('pages through sessions newest updatedAt first with limit and cursor, filtered by metadata', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await createSession(api, { metadata: { batch: 'paging', n: i } })).id);
    await createSession(api, { metadata: { batch: 'other' } });

    const seen: Session[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `/v1/sessions?limit=2&metadata.batch=paging${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await api.get<Page>(query);
      expect(page.status).toBe(200);
      expect(Object.keys(page.body).sort()).toEqual(['data', 'nextCursor']);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      page.body.data.forEach(expectSession);
      seen.push(...page.body.data);
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);

    expect(pages).toBe(3);
    expect(seen.map((s) => s.id).sort()).toEqual([...ids].sort());
    expect(new Set(seen.map((s) => s.id)).size).toBe(5);
    const stamps = seen.map((s) => Date.parse(s.updatedAt));
    expect(stamps).toEqual([...stamps].sort((a, b) => b - a));
    // Created one after the other, never updated: newest first is the reverse creation order.
    expect(seen.map((s) => s.metadata.n)).toEqual([4, 3, 2, 1, 0]);

    // A number in metadata matches its text form; an unknown value matches nothing.
    const byNumber = await api.get<Page>('/v1/sessions?metadata.batch=paging&metadata.n=3');
    expect(byNumber.body.data.map((s) => s.id)).toEqual([ids[3]]);
    expect((await api.get<Page>('/v1/sessions?metadata.batch=nope')).body).toEqual({
      data: [],
      nextCursor: null,
    });
  });

  it('filters sessions by userId', async () => {
    const bob1 = await createSession(api, { userId: 'bob' });
    const bob2 = await createSession(api, { userId: 'bob' });
    await createSession(api, { userId: 'carol' });
    const res = await api.get<Page>('/v1/sessions?userId=bob');
    expect(res.status).toBe(200);
    expect(res.body.data.map((s) => s.id)).toEqual([bob2.id, bob1.id]);
    expect(res.body.data.every((s) => s.userId === 'bob')).toBe(true);
  });
});

describe('a conversation with mock:echo', () => {
  let api: Api;
  let session: Session;

  beforeAll(async () => {
    ({ api } = await newTenant(t, 'conversation'));
    session = await createSession(api);
  });

  it('answers a prompt with 202 {runId}; the run is pollable until completed', async () => {
    const res = await api.post(`/v1/sessions/${session.id}/prompt`, { content: 'hello there' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ runId: expect.stringMatching(UUID) });

    const run = await runReaching(api, res.body.runId, 'completed');
    expect(run).toEqual({
      id: res.body.runId,
      sessionId: session.id,
      kind: 'prompt',
      status: 'completed',
      usage: expect.objectContaining(usageShape),
      attempts: 1,
      actor: { type: 'key', keyId: expect.stringMatching(UUID) },
      startedAt: expect.stringMatching(ISO),
      finishedAt: expect.stringMatching(ISO),
    });
    expect(run.usage.outputTokens).toBe(3); // "Echo: hello there"
    expect(Date.parse(run.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(run.startedAt!));

    const messages = await api.get(`/v1/sessions/${session.id}/messages`);
    expect(messages.status).toBe(200);
    expect(messages.body.data).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hello there' }], timestamp: expect.any(Number) },
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'Echo: hello there' }],
        timestamp: expect.any(Number),
      },
    ]);
    expectError(await api.get('/v1/runs/00000000-0000-4000-8000-000000000000'), 404, 'not_found');
  });

  it('answers wait:true with the TurnResult once the run stops', async () => {
    const res = await api.post(`/v1/sessions/${session.id}/prompt`, {
      content: 'second question',
      wait: true,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      sessionId: session.id,
      finalResponse: 'Echo: second question',
      items: [
        expect.objectContaining({ type: 'message', role: 'user', text: 'second question' }),
        expect.objectContaining({ type: 'message', role: 'assistant', text: 'Echo: second question' }),
      ],
      durationMs: expect.any(Number),
      numTurns: 1,
      isError: false,
      runId: expect.stringMatching(UUID),
      status: 'completed',
      awaiting: [],
    });
  });

  it('answers format:"json" with the snake_case JsonResult', async () => {
    const res = await api.post(`/v1/sessions/${session.id}/prompt`, {
      content: 'third',
      wait: true,
      format: 'json',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      session_id: session.id,
      is_error: false,
      duration_ms: expect.any(Number),
      num_turns: 1,
      result: 'Echo: third',
      run_id: expect.stringMatching(UUID),
      status: 'completed',
      awaiting: [],
    });
  });

  it('shows the tree: nodes, path, cursors, roots, head and total usage', async () => {
    const res = await api.get<TreeView>(`/v1/sessions/${session.id}/tree`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['cursors', 'head', 'nodes', 'path', 'roots', 'usage']);
    const { nodes } = res.body;
    expect(nodes.map((n) => [n.id, n.parentId, n.message.role])).toEqual([
      [1, null, 'user'],
      [2, 1, 'assistant'],
      [3, 2, 'user'],
      [4, 3, 'assistant'],
      [5, 4, 'user'],
      [6, 5, 'assistant'],
    ]);
    for (const n of nodes) {
      expect(Object.keys(n).sort()).toEqual(['createdAt', 'id', 'message', 'parentId', 'usage']);
      expect(n.createdAt).toMatch(ISO);
      expect(n.createdAt).toBe(new Date(n.message.timestamp).toISOString());
      if (n.message.role === 'assistant') expect(n.usage).toMatchObject(usageShape);
      else expect(n.usage).toBeNull();
    }
    expect(res.body).toMatchObject({
      path: [1, 2, 3, 4, 5, 6],
      cursors: { '1': 2, '2': 3, '3': 4, '4': 5, '5': 6 },
      roots: [1],
      head: 6,
    });
    const outputs = nodes.reduce((sum, n) => sum + (n.usage?.outputTokens ?? 0), 0);
    expect(res.body.usage.outputTokens).toBe(outputs);

    const detail = await api.get<SessionDetail>(`/v1/sessions/${session.id}`);
    expect(detail.body).toMatchObject({ status: 'idle', head: 6, path: [1, 2, 3, 4, 5, 6] });
    expect(detail.body.usage.outputTokens).toBe(outputs);
    // The first prompt titled the untitled session once its first run completed.
    expect(detail.body.title).toBe('hello there');

    const node = await api.get(`/v1/sessions/${session.id}/nodes/3`);
    expect(node.body).toEqual(nodes[2]);
    expect((await api.get(`/v1/sessions/${session.id}/nodes/3/children`)).body).toEqual({ ids: [4] });
    expect((await api.get(`/v1/sessions/${session.id}/nodes/3/siblings`)).body).toEqual({ ids: [] });
    expect((await api.get(`/v1/sessions/${session.id}/nodes/3/path`)).body).toEqual({ ids: [1, 2, 3] });
    expectError(await api.get(`/v1/sessions/${session.id}/nodes/99`), 404, 'not_found');
  });
});

describe('branches and navigation', () => {
  let api: Api;
  let id: string;

  beforeAll(async () => {
    ({ api } = await newTenant(t, 'branching'));
    id = (await createSession(api)).id;
    for (const content of ['first', 'second']) {
      const res = await api.post(`/v1/sessions/${id}/prompt`, { content, wait: true });
      expect(res.status).toBe(200);
    }
    // nodes: 1 user "first" -> 2 "Echo: first" -> 3 user "second" -> 4 "Echo: second"
  });

  const turns = async () => {
    const res = await api.get<{ data: Turn[] }>(`/v1/sessions/${id}/turns`);
    expect(res.status).toBe(200);
    return res.body.data;
  };

  it('regenerates a user node: a new reply beside the old one, shown as a regeneration', async () => {
    const res = await api.post(`/v1/sessions/${id}/branch`, { nodeId: 3, wait: true });
    expect(res.status).toBe(200);
    expect(res.body.finalResponse).toBe('Echo: second');
    const tree = (await api.get<TreeView>(`/v1/sessions/${id}/tree`)).body;
    expect(tree.nodes.find((n) => n.id === 5)).toMatchObject({ parentId: 3 });
    expect(tree).toMatchObject({ path: [1, 2, 3, 5], head: 5 });
    const [, second] = await turns();
    expect(second).toMatchObject({ id: 3, resId: 5, edits: [3], regens: [4, 5] });
  });

  it('edits through an assistant node with content: a new prompt and reply beside the old prompt', async () => {
    const res = await api.post(`/v1/sessions/${id}/branch`, {
      nodeId: 2,
      content: 'second, edited',
      wait: true,
    });
    expect(res.status).toBe(200);
    expect(res.body.finalResponse).toBe('Echo: second, edited');
    const tree = (await api.get<TreeView>(`/v1/sessions/${id}/tree`)).body;
    expect(tree.nodes.filter((n) => n.id >= 6).map((n) => [n.id, n.parentId])).toEqual([
      [6, 2],
      [7, 6],
    ]);
    expect(tree).toMatchObject({ path: [1, 2, 6, 7], head: 7 });
    const all = await turns();
    expect(all).toHaveLength(2);
    expect(all[1]).toMatchObject({ id: 6, resId: 7, edits: [3, 6], regens: [7] });
    expect(all[1]!.userText).toEqual([{ type: 'text', text: 'second, edited' }]);
  });

  it('starts a new root with nodeId null', async () => {
    const res = await api.post(`/v1/sessions/${id}/branch`, {
      nodeId: null,
      content: 'fresh start',
      wait: true,
    });
    expect(res.status).toBe(200);
    const tree = (await api.get<TreeView>(`/v1/sessions/${id}/tree`)).body;
    expect(tree).toMatchObject({ roots: [1, 8], path: [8, 9], head: 9 });
    expect(tree.nodes.find((n) => n.id === 8)).toMatchObject({ parentId: null });
    const all = await turns();
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ id: 8, resId: 9, edits: [1, 8] });
  });

  it('navigates between branches, always landing on a tip', async () => {
    const toOriginal = await api.post(`/v1/sessions/${id}/navigate`, { nodeId: 4 });
    expect(toOriginal.status).toBe(200);
    expect(toOriginal.body).toEqual({ path: [1, 2, 3, 4], head: 4 });
    let all = await turns();
    expect(all[1]).toMatchObject({ id: 3, resId: 4, edits: [3, 6], regens: [4, 5] });

    // Navigating to an inner node follows the cursors down to a tip: node 3's cursor is now 4.
    expect((await api.post(`/v1/sessions/${id}/navigate`, { nodeId: 3 })).body).toEqual({
      path: [1, 2, 3, 4],
      head: 4,
    });
    expect((await api.post(`/v1/sessions/${id}/navigate`, { nodeId: 6 })).body).toEqual({
      path: [1, 2, 6, 7],
      head: 7,
    });
    // Root 1 remembers its last branch (2 -> 6).
    expect((await api.post(`/v1/sessions/${id}/navigate`, { nodeId: 1 })).body).toEqual({
      path: [1, 2, 6, 7],
      head: 7,
    });
    const detail = (await api.get<SessionDetail>(`/v1/sessions/${id}`)).body;
    expect(detail).toMatchObject({ path: [1, 2, 6, 7], head: 7 });
    all = await turns();
    expect(all.map((turn) => turn.id)).toEqual([1, 6]);
    expect((await api.get(`/v1/sessions/${id}/turns/6`)).body).toMatchObject({ id: 6, resId: 7 });
    expectError(await api.get(`/v1/sessions/${id}/turns/3`), 404, 'not_found'); // off the active path
    expectError(await api.get(`/v1/sessions/${id}/turns/7`), 404, 'not_found'); // not a turn start

    // The branch pickers' data: other replies, other prompts, other roots.
    expect((await api.get(`/v1/sessions/${id}/nodes/4/siblings`)).body).toEqual({ ids: [5] });
    expect((await api.get(`/v1/sessions/${id}/nodes/3/siblings`)).body).toEqual({ ids: [6] });
    expect((await api.get(`/v1/sessions/${id}/nodes/1/siblings`)).body).toEqual({ ids: [8] });
    expect((await api.get(`/v1/sessions/${id}/nodes/2/children`)).body).toEqual({ ids: [3, 6] });

    expect((await api.post(`/v1/sessions/${id}/navigate`, { nodeId: null })).body).toEqual({
      path: [],
      head: null,
    });
    expect(await turns()).toEqual([]);
    expectError(await api.post(`/v1/sessions/${id}/navigate`, { nodeId: 99 }), 404, 'not_found');
  });

  it('refuses branch targets of the wrong role', async () => {
    expectError(await api.post(`/v1/sessions/${id}/branch`, { nodeId: 2 }), 422, 'not_user_node');
    expectError(
      await api.post(`/v1/sessions/${id}/branch`, { nodeId: 3, content: 'x' }),
      422,
      'not_assistant_node',
    );
    expectError(await api.post(`/v1/sessions/${id}/branch`, { nodeId: 99 }), 404, 'not_found');
  });
});

describe('a client tool round', () => {
  it('pauses on the client tool, shows the run in flight, and completes once resumed with a result', async () => {
    const { api } = await newTenant(t, 'tools');
    const session = await createSession(api, {
      model: 'mock:script',
      tools: [
        {
          name: 'get_weather',
          description: 'The weather in a city',
          inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
      opts: {
        script: [
          { toolCalls: [{ name: 'get_weather', input: { city: 'Paris' } }] },
          { text: 'Sunny in Paris.' },
        ],
      },
    });
    expect(session.tools).toHaveLength(1);

    const started = await api.post(`/v1/sessions/${session.id}/prompt`, { content: 'Weather in Paris?' });
    expect(started.status).toBe(202);
    const { runId } = started.body;

    const paused = await sessionReaching(api, session.id, 'paused');
    expect(paused.inFlight).toEqual({
      runId,
      pending: expect.any(Array),
      partial: null,
      awaiting: [expect.objectContaining({ type: 'tool_use', name: 'get_weather' })],
    });
    const pending = paused.inFlight!.pending;
    expect(pending.map((m) => m.role)).toEqual(['user', 'assistant']);
    const toolUse = pending[1]!.content.find((b) => b.type === 'tool_use') as ToolUseBlock;
    expect(toolUse).toEqual({
      type: 'tool_use',
      id: expect.any(String),
      name: 'get_weather',
      input: { city: 'Paris' },
    });
    expect(await runReaching(api, runId, 'paused')).toMatchObject({ kind: 'prompt', finishedAt: null });

    // While paused, idle-only commands are refused.
    expectError(
      await api.post(`/v1/sessions/${session.id}/prompt`, { content: 'again?' }),
      409,
      'session_paused',
    );
    expectError(
      await api.post(`/v1/sessions/${session.id}/navigate`, { nodeId: null }),
      409,
      'session_paused',
    );

    // Closed while paused, the session is live nowhere; reading it shows the run in flight and opens nothing.
    expect((await api.post(`/v1/sessions/${session.id}/close`)).status).toBe(204);
    await eventually(async () => expect((await api.get(`/v1/live/${session.id}`)).status).toBe(404));
    const read = await api.get<SessionDetail>(`/v1/sessions/${session.id}`);
    expect(read.body).toMatchObject({ status: 'paused', inFlight: paused.inFlight });
    expect(read.body).not.toHaveProperty('live');
    expect((await api.get(`/v1/live/${session.id}`)).status).toBe(404);

    const resumed = await api.post<TurnResult>(`/v1/sessions/${session.id}/resume`, {
      decision: { type: 'result', content: '21°C and sunny' },
      wait: true,
    });
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({
      sessionId: session.id,
      finalResponse: 'Sunny in Paris.',
      isError: false,
    });
    expect(resumed.body.items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'tool_call', toolId: toolUse.id, toolName: 'get_weather' }),
        expect.objectContaining({
          type: 'tool_result',
          toolId: toolUse.id,
          value: '21°C and sunny',
          isError: false,
        }),
      ]),
    );

    expect(await runReaching(api, runId, 'completed')).toMatchObject({
      finishedAt: expect.stringMatching(ISO),
    });
    const detail = await api.get<SessionDetail>(`/v1/sessions/${session.id}`);
    expect(detail.body.status).toBe('idle');
    expect(detail.body).not.toHaveProperty('inFlight');

    const tree = (await api.get<TreeView>(`/v1/sessions/${session.id}/tree`)).body;
    const roles = tree.nodes.map((n) => n.message.role);
    expect(roles).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(tree.nodes[2]!.message.content).toEqual([
      { type: 'tool_result', toolUseId: toolUse.id, content: '21°C and sunny', isError: false },
    ]);
    expect(tree.nodes[3]!.message.content).toEqual([{ type: 'text', text: 'Sunny in Paris.' }]);
    // The tool round folds into one UI turn.
    const turns = (await api.get(`/v1/sessions/${session.id}/turns`)).body.data;
    expect(turns).toHaveLength(1);
    expect(turns[0].toolResults[toolUse.id]).toMatchObject({ content: '21°C and sunny' });

    expectError(
      await api.post(`/v1/sessions/${session.id}/resume`, { decision: { type: 'result', content: 'late' } }),
      409,
      'not_paused',
    );
  });
});

describe('PATCH a session', () => {
  let api: Api;

  beforeAll(async () => {
    ({ api } = await newTenant(t, 'patch'));
  });

  it('changes the title and, while idle, the model', async () => {
    const session = await createSession(api);
    const titled = await api.patch(`/v1/sessions/${session.id}`, { title: 'Renamed' });
    expect(titled.status).toBe(200);
    expectSession(titled.body);
    expect(titled.body).toMatchObject({ title: 'Renamed', model: 'mock:echo' });

    const remodelled = await api.patch(`/v1/sessions/${session.id}`, {
      model: 'mock:script',
      opts: { script: [{ text: 'scripted answer' }] },
      metadata: { stage: 'beta' },
    });
    expect(remodelled.status).toBe(200);
    expect(remodelled.body).toMatchObject({
      title: 'Renamed',
      model: 'mock:script',
      opts: { script: [{ text: 'scripted answer' }] },
      metadata: { stage: 'beta' },
    });
    expect(Date.parse(remodelled.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(session.updatedAt));
    const res = await api.post(`/v1/sessions/${session.id}/prompt`, { content: 'go', wait: true });
    expect(res.body.finalResponse).toBe('scripted answer');
    expect((await api.get<SessionDetail>(`/v1/sessions/${session.id}`)).body.title).toBe('Renamed'); // a set title stays
  });

  it('refuses a model change while a run is in flight (session_busy), but takes a title', async () => {
    const session = await createSession(api, { opts: { delayMs: 100 } });
    const started = await api.post(`/v1/sessions/${session.id}/prompt`, { content: 'a b c d e f g h i j' });
    expect(started.status).toBe(202);
    await sessionReaching(api, session.id, 'busy');
    expectError(await api.patch(`/v1/sessions/${session.id}`, { model: 'mock:script' }), 409, 'session_busy');
    const titled = await api.patch(`/v1/sessions/${session.id}`, { title: 'Busy but renamed' });
    expect(titled.status).toBe(200);
    expect(titled.body).toMatchObject({ title: 'Busy but renamed', model: 'mock:echo' });
    expect((await api.post(`/v1/sessions/${session.id}/cancel`)).status).toBe(200);
  });
});

describe('a user token', () => {
  it('acts for one end user only: sessions it creates are theirs, and it sees no one else’s', async () => {
    const { api } = await newTenant(t, 'users');
    const minted = await api.post('/v1/tokens', { userId: 'alice', ttlSeconds: 600 });
    expect(minted.status).toBe(201);
    expect(minted.body).toEqual({ token: expect.any(String), expiresAt: expect.stringMatching(ISO) });
    const remaining = Date.parse(minted.body.expiresAt) - Date.now();
    expect(remaining).toBeGreaterThan(590_000);
    expect(remaining).toBeLessThanOrEqual(600_000);
    const alice = api.as(minted.body.token);

    const bobs = await createSession(api, { userId: 'bob' });
    const tenants = await createSession(api);
    const own = await alice.post('/v1/sessions', { model: 'mock:echo', userId: 'mallory' });
    expect(own.status).toBe(201);
    expect(own.body.userId).toBe('alice'); // forced to the token's subject
    const explicit = await createSession(api, { userId: 'alice' });

    const listed = await alice.get<Page>('/v1/sessions');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((s) => s.id).sort()).toEqual([own.body.id, explicit.id].sort());
    expect((await alice.get<Page>('/v1/sessions?userId=bob')).body.data).toEqual([]);
    expectError(await alice.get(`/v1/sessions/${bobs.id}`), 404, 'not_found');
    expectError(await alice.get(`/v1/sessions/${tenants.id}`), 404, 'not_found');
    expectError(await alice.post(`/v1/sessions/${bobs.id}/prompt`, { content: 'hi' }), 404, 'not_found');

    const answer = await alice.post(`/v1/sessions/${own.body.id}/prompt`, { content: 'mine', wait: true });
    expect(answer.status).toBe(200);
    expect(answer.body.finalResponse).toBe('Echo: mine');

    // The tenant key sees everyone's sessions; a user token may not mint tokens or touch the admin.
    const all = (await api.get<Page>('/v1/sessions')).body.data.map((s) => s.id);
    expect(all).toEqual(expect.arrayContaining([bobs.id, tenants.id, own.body.id, explicit.id]));
    expectError(await alice.post('/v1/tokens', { userId: 'alice' }), 403, 'forbidden');
    expectError(await alice.post('/v1/admin/tenants', { name: 'x' }), 403, 'forbidden');
    expectError(await alice.as('not.a.token').get<Page>('/v1/sessions'), 401, 'unauthorized');
  });
});

describe('cancelling a slow run', () => {
  it('stops the run: the session is idle again, the run cancelled, and nothing is committed', async () => {
    const { api } = await newTenant(t, 'cancel');
    const session = await createSession(api, { opts: { delayMs: 50 } });
    const first = await api.post(`/v1/sessions/${session.id}/prompt`, { content: 'quick', wait: true });
    expect(first.status).toBe(200);
    const before = (await api.get<TreeView>(`/v1/sessions/${session.id}/tree`)).body;
    expect(before.nodes).toHaveLength(2);

    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    const started = await api.post(`/v1/sessions/${session.id}/prompt`, { content: words });
    expect(started.status).toBe(202);
    const { runId } = started.body;
    const busy = await eventually(async () => {
      const res = await api.get<SessionDetail>(`/v1/sessions/${session.id}`);
      expect(res.body.status).toBe('busy');
      expect(res.body.inFlight?.partial).not.toBeNull(); // streaming has begun
      return res.body;
    });
    expect(busy.inFlight).toMatchObject({ runId, pending: [expect.objectContaining({ role: 'user' })] });
    expect(await runReaching(api, runId, 'running')).toMatchObject({ finishedAt: null });

    const cancelled = await api.post(`/v1/sessions/${session.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual({ runId });

    const after = await api.get<SessionDetail>(`/v1/sessions/${session.id}`);
    expect(after.body.status).toBe('idle');
    expect(after.body).not.toHaveProperty('inFlight');
    expect(after.body).toMatchObject({ path: before.path, head: before.head });
    expect(await runReaching(api, runId, 'cancelled')).toMatchObject({
      finishedAt: expect.stringMatching(ISO),
    });
    expect((await api.get<TreeView>(`/v1/sessions/${session.id}/tree`)).body.nodes).toEqual(before.nodes);
    expectError(await api.post(`/v1/sessions/${session.id}/cancel`), 409, 'idle');

    // The session takes prompts again.
    const again = await api.post(`/v1/sessions/${session.id}/prompt`, { content: 'still here', wait: true });
    expect(again.body.finalResponse).toBe('Echo: still here');
  });
});

describe('close and delete', () => {
  it('closes a session (204, idempotent, data kept), then deletes it (204, then 404)', async () => {
    const { api } = await newTenant(t, 'teardown');
    const session = await createSession(api);
    const run = await api.post(`/v1/sessions/${session.id}/prompt`, { content: 'keep me' });
    await runReaching(api, run.body.runId, 'completed');
    expect((await api.get(`/v1/live/${session.id}`)).status).toBe(200);

    expect((await api.post(`/v1/sessions/${session.id}/close`)).status).toBe(204);
    expect((await api.post(`/v1/sessions/${session.id}/close`)).status).toBe(204);
    expectError(await api.get(`/v1/live/${session.id}`), 404, 'not_found');
    const kept = await api.get<{ data: Message[] }>(`/v1/sessions/${session.id}/messages`);
    expect(kept.body.data.map((m) => m.role)).toEqual(['user', 'assistant']);

    const deleted = await api.delete(`/v1/sessions/${session.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    expectError(await api.get<SessionDetail>(`/v1/sessions/${session.id}`), 404, 'not_found');
    expectError(await api.get<TreeView>(`/v1/sessions/${session.id}/tree`), 404, 'not_found');
    expectError(await api.get(`/v1/runs/${run.body.runId}`), 404, 'not_found');
    expectError(await api.delete(`/v1/sessions/${session.id}`), 404, 'not_found');
    expectError(await api.post(`/v1/sessions/${session.id}/close`), 404, 'not_found');
    expect((await api.get<Page>('/v1/sessions')).body.data).toEqual([]);
  });
});
