// Finding, forking, exporting and importing conversations over HTTP, on both runtimes (a Postgres database of its
// own, and the embedded PGlite): full-text search with filters and a user token's limits, count, fork while the
// source is busy, export in every format and import of each (a ChatGPT export with its branches), exports the
// OpenAI and Anthropic APIs take (turns of one role merged, unpaired tool blocks left out) and imports refused
// naming the message (orphan tool results, arguments that are no JSON), bulk NDJSON export resumed by cursor and
// imported line by line with refusals named by line and field, bulk delete and bulk cancel.

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-call -- JSON bodies of any shape, read loosely by tests */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { anthropicMessagesRequestSchema, eventually, openAiChatRequestSchema } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

const NDJSON = { 'content-type': 'application/x-ndjson' };
const lines = (text: string): any[] =>
  text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

/** A session with these prompts answered by mock:echo. */
async function conversation(
  api: Api,
  prompts: string[],
  extra: Record<string, unknown> = {},
): Promise<string> {
  const created = await api.post('/v1/sessions', { model: 'mock:echo', ...extra });
  expect(created.status).toBe(201);
  for (const content of prompts) {
    expect((await api.post(`/v1/sessions/${created.body.id}/prompt`, { content, wait: true })).status).toBe(
      200,
    );
  }
  return created.body.id;
}

const runtimes: Array<[string, () => Promise<{ app: TestApp; cleanup: () => void }>]> = [
  ['Postgres', async () => ({ app: await startTestApp(), cleanup: () => undefined })],
  [
    'the embedded PGlite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'canopy-conversations-'));
      return {
        app: await startTestApp({ embeddedDataDir: dir }),
        cleanup: () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  ],
];

describe.each(runtimes)('on %s', (_, start) => {
  let t: TestApp;
  let cleanup: () => void;
  let api: Api;
  let alice: Api;
  let ids: { deploy: string; cooking: string; bobs: string };

  beforeAll(async () => {
    ({ app: t, cleanup } = await start());
    const tenant = await newTenant(t, 'conversations');
    api = tenant.api;
    alice = api.as((await api.post('/v1/tokens', { userId: 'alice' })).body.token);
    ids = {
      deploy: await conversation(api, ['How do I deploy the api to production?', 'and roll it back'], {
        userId: 'alice',
        metadata: { team: 'ops', tier: 'gold' },
      }),
      cooking: await conversation(api, ['A recipe for pancakes please'], {
        userId: 'alice',
        metadata: { team: 'kitchen' },
      }),
      bobs: await conversation(api, ['deploy the worker with kubernetes'], {
        userId: 'bob',
        metadata: { tier: 'silver' },
      }),
    };
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    cleanup?.();
  });

  it('searches message text (phrases, or, -), ranked, with node ids and a highlighted snippet, paged', async () => {
    const res = await api.get('/v1/sessions/search?q=deploy');
    expect(res.status).toBe(200);
    expect(res.body.data.map((h: any) => h.session.id).sort()).toEqual([ids.deploy, ids.bobs].sort());
    const hit = res.body.data.find((h: any) => h.session.id === ids.deploy);
    // The prompt (node 1) and mock:echo's answer (node 2) both say "deploy".
    expect(hit.nodeIds.sort()).toEqual([1, 2]);
    expect(hit.snippet.highlights.length).toBeGreaterThan(0);
    for (const [a, b] of hit.snippet.highlights)
      expect(hit.snippet.text.slice(a, b).toLowerCase()).toBe('deploy');

    const ids_ = async (q: string) =>
      (await api.get(`/v1/sessions/search?${q}`)).body.data.map((h: any) => h.session.id);
    expect(await ids_(`q=${encodeURIComponent('"deploy the api"')}`)).toEqual([ids.deploy]);
    expect((await ids_('q=pancakes%20or%20kubernetes')).sort()).toEqual([ids.cooking, ids.bobs].sort());
    expect(await ids_('q=deploy%20-kubernetes')).toEqual([ids.deploy]);
    expect(await ids_('q=deploy&metadata.team=ops')).toEqual([ids.deploy]);
    expect((await ids_('q=deploy&metadataAny.tier=gold&metadataAny.tier=silver')).sort()).toEqual(
      [ids.deploy, ids.bobs].sort(),
    );
    expect(await ids_('q=deploy&userId=bob')).toEqual([ids.bobs]);
    expect(await ids_('q=deploy&status=busy')).toEqual([]);
    // Prompted sessions are live (until their idle shutdown).
    expect(await ids_('q=deploy&live=true&model=mock:echo')).toHaveLength(2);
    expect(await ids_('q=deploy&live=false')).toEqual([]);

    const first = await api.get('/v1/sessions/search?q=deploy&limit=1');
    expect(first.body.data).toHaveLength(1);
    const second = await api.get(`/v1/sessions/search?q=deploy&limit=1&cursor=${first.body.nextCursor}`);
    expect([first.body.data[0].session.id, second.body.data[0].session.id].sort()).toEqual(
      [ids.deploy, ids.bobs].sort(),
    );
    expect(second.body.nextCursor).toBeNull();

    const nothing = await api.get('/v1/sessions/search?q=-deploy');
    expect(nothing.status).toBe(400);
    expect(nothing.body.error.details.field).toBe('q');
  });

  it("a user token searches, counts and lists only its user's sessions", async () => {
    const found = (await alice.get('/v1/sessions/search?q=deploy%20or%20pancakes')).body.data.map(
      (h: any) => h.session.id,
    );
    expect(found.sort()).toEqual([ids.deploy, ids.cooking].sort());
    expect((await alice.get('/v1/sessions/search?q=deploy&userId=bob')).body.data).toEqual([]);
    expect((await alice.get('/v1/sessions/count')).body).toEqual({ count: 2 });
    expect((await api.get('/v1/sessions/count?q=deploy')).body).toEqual({ count: 2 });
    expect((await api.get('/v1/sessions/count?metadata.team=kitchen')).body).toEqual({ count: 1 });
  });

  it('forks from any node (default the tip), ids from 1, forkedFrom recorded, while the source is busy', async () => {
    const source = await conversation(api, ['one', 'two'], { opts: { delayMs: 40 } });
    const before = (await api.get(`/v1/sessions/${source}/tree`)).body;
    const started = await api.post(`/v1/sessions/${source}/prompt`, {
      content: 'a b c d e f g h i j k l m n o p',
    });
    expect(started.status).toBe(202);
    await eventually(async () => expect((await api.get(`/v1/sessions/${source}`)).body.status).toBe('busy'));

    const fork = await api.post(`/v1/sessions/${source}/fork`, { title: 'branch of two' });
    expect(fork.status).toBe(201);
    expect(fork.body).toMatchObject({
      title: 'branch of two',
      metadata: { forkedFrom: { sessionId: source, nodeId: 4 } },
    });
    const tree = (await api.get(`/v1/sessions/${fork.body.id}/tree`)).body;
    expect(tree.path).toEqual([1, 2, 3, 4]);
    expect(tree.nodes.map((n: any) => n.message)).toEqual(before.nodes.map((n: any) => n.message));
    expect(tree.nodes.map((n: any) => n.usage)).toEqual(before.nodes.map((n: any) => n.usage));

    const early = await api.post(`/v1/sessions/${source}/fork`, { nodeId: 2, metadata: { why: 'retry' } });
    expect(early.body.metadata).toEqual({ why: 'retry', forkedFrom: { sessionId: source, nodeId: 2 } });
    expect((await api.get(`/v1/sessions/${early.body.id}/tree`)).body.path).toEqual([1, 2]);
    expect((await api.post(`/v1/sessions/${source}/fork`, { nodeId: 99 })).status).toBe(404);
    expect((await alice.post(`/v1/sessions/${source}/fork`, {})).status).toBe(404);
    expect((await api.post(`/v1/sessions/${source}/cancel`)).status).toBe(200);
  });

  it('a fork shares its source: runs on, searches and exports as a copy, and outlives the source', async () => {
    const source = await conversation(api, ['the quokka question', 'the second question']);
    const fork = await api.post(`/v1/sessions/${source}/fork`, { nodeId: 2, metadata: { team: 'fork' } });
    expect(fork.status).toBe(201);
    const id = fork.body.id as string;
    const sourceTree = (await api.get(`/v1/sessions/${source}/tree`)).body;
    // A turn on the fork: its prompt's parent is a shared node.
    expect(
      (await api.post(`/v1/sessions/${id}/prompt`, { content: 'the wombat follow-up', wait: true })).status,
    ).toBe(200);
    const tree = (await api.get(`/v1/sessions/${id}/tree`)).body;
    expect(tree.path).toEqual([1, 2, 3, 4]);
    expect(tree.nodes.map((n: any) => [n.id, n.parentId])).toEqual([
      [1, null],
      [2, 1],
      [3, 2],
      [4, 3],
    ]);
    expect(tree.nodes.slice(0, 2).map((n: any) => n.message)).toEqual(
      sourceTree.nodes.slice(0, 2).map((n: any) => n.message),
    );
    const hitsOf = async (q: string) =>
      Object.fromEntries(
        (await api.get(`/v1/sessions/search?q=${q}`)).body.data.map((h: any) => [
          h.session.id,
          h.nodeIds.sort(),
        ]),
      );
    expect(await hitsOf('quokka')).toEqual({ [source]: [1, 2], [id]: [1, 2] });
    expect(await hitsOf('quokka&metadata.team=fork')).toEqual({ [id]: [1, 2] });
    const exported = (await api.get(`/v1/sessions/${id}/export`)).body;
    expect(exported.tree.nodes.map((n: any) => n.id)).toEqual([1, 2, 3, 4]);

    expect((await api.delete(`/v1/sessions/${source}`)).status).toBe(204);
    expect((await api.get(`/v1/sessions/${id}/tree`)).body).toEqual(tree);
    expect((await api.get(`/v1/sessions/${id}/export`)).body).toEqual(exported);
    expect(await hitsOf('quokka')).toEqual({ [id]: [1, 2] });
    expect(await hitsOf('wombat')).toEqual({ [id]: [3, 4] });
  });

  it('exports canopy (round-trips exactly), openai, anthropic and markdown', async () => {
    const canopy = await api.get(`/v1/sessions/${ids.deploy}/export`);
    expect(canopy.status).toBe(200);
    expect(canopy.body).toMatchObject({
      format: 'canopy',
      version: 1,
      session: { id: ids.deploy, userId: 'alice' },
    });
    expect(canopy.body.tree.nodes).toHaveLength(4);

    // Into another tenant: the same document back, id and times included.
    const other = (await newTenant(t, 'other')).api;
    const imported = await other.post('/v1/sessions/import', { format: 'canopy', data: canopy.body });
    expect(imported.status).toBe(201);
    expect(imported.body.id).toBe(ids.deploy);
    expect((await other.get(`/v1/sessions/${ids.deploy}/export`)).body).toEqual(canopy.body);
    expect((await other.post('/v1/sessions/import', { format: 'canopy', data: canopy.body })).status).toBe(
      409,
    );

    const openai = (await api.get(`/v1/sessions/${ids.deploy}/export?format=openai`)).body;
    expect(openai).toEqual({
      model: 'echo',
      messages: [
        { role: 'user', content: 'How do I deploy the api to production?' },
        { role: 'assistant', content: 'Echo: How do I deploy the api to production?' },
        { role: 'user', content: 'and roll it back' },
        { role: 'assistant', content: 'Echo: and roll it back' },
      ],
    });
    const anthropic = (await api.get(`/v1/sessions/${ids.deploy}/export?format=anthropic`)).body;
    expect(anthropic.messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'Echo: How do I deploy the api to production?' }],
    });
    const markdown = await fetch(`${t.url}/v1/sessions/${ids.deploy}/export?format=markdown`, {
      headers: { authorization: `Bearer ${api.credential}` },
    });
    expect(markdown.headers.get('content-type')).toMatch(/^text\/markdown/);
    const text = await markdown.text();
    expect(text).toContain('## User');
    expect(text).toContain('Echo: and roll it back');
  });

  it('imports OpenAI and Anthropic message arrays (tool calls and results included) and exports them back', async () => {
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '18C and sunny' },
      { role: 'assistant', content: 'It is 18C and sunny.' },
    ];
    const imported = await api.post('/v1/sessions/import', {
      format: 'openai',
      data: { model: 'gpt-4o', messages },
      userId: 'carol',
    });
    expect(imported.status).toBe(201);
    expect(imported.body).toMatchObject({ model: 'openai:gpt-4o', system: 'Be brief.', userId: 'carol' });
    expect((await api.get(`/v1/sessions/${imported.body.id}/export?format=openai`)).body).toEqual({
      model: 'gpt-4o',
      messages,
    });

    const anthropic = {
      model: 'claude-x',
      system: 'Be brief.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'use the tool', signature: 'sig' },
            { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Sunny.' }] },
      ],
    };
    const fromAnthropic = await api.post('/v1/sessions/import', {
      format: 'anthropic',
      data: anthropic,
      metadata: { src: 'a' },
    });
    expect(fromAnthropic.status).toBe(201);
    expect(fromAnthropic.body.metadata).toEqual({ src: 'a' });
    expect((await api.get(`/v1/sessions/${fromAnthropic.body.id}/export?format=anthropic`)).body).toEqual({
      ...anthropic,
      max_tokens: 4096,
    });
    const turns = (await api.get(`/v1/sessions/${fromAnthropic.body.id}/turns`)).body.data;
    expect(turns).toHaveLength(1);
    expect(turns[0].toolResults.toolu_1.content).toBe('sunny');
  });

  it('imports a ChatGPT export conversation keeping its branches, the path leading to current_node', async () => {
    const node = (id: string, parent: string | null, role: string | null, text: string, time: number) => ({
      id,
      parent,
      children: [],
      message: role
        ? { id, author: { role }, create_time: time, content: { content_type: 'text', parts: [text] } }
        : null,
    });
    const mapping = Object.fromEntries(
      [
        node('root', null, null, '', 0),
        node('sys', 'root', 'system', '', 1),
        node('u1', 'sys', 'user', 'Name a color', 2),
        node('a1', 'u1', 'assistant', 'Blue', 3),
        node('a2', 'u1', 'assistant', 'Green', 4),
        node('u2', 'a2', 'user', 'Another?', 5),
        node('a3', 'u2', 'assistant', 'Red', 6),
      ].map((n) => [n.id, n]),
    );
    const data = {
      title: 'Colors',
      create_time: 1_700_000_000,
      update_time: 1_700_000_100,
      mapping,
      current_node: 'a3',
      conversation_id: 'c-1',
    };
    const res = await api.post('/v1/sessions/import', { format: 'chatgpt', data });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      title: 'Colors',
      metadata: { importedFrom: 'chatgpt', conversationId: 'c-1' },
    });
    expect(res.body.createdAt).toBe(new Date(1_700_000_000_000).toISOString());
    const tree = (await api.get(`/v1/sessions/${res.body.id}/tree`)).body;
    expect(tree.nodes.map((n: any) => [n.id, n.parentId, n.message.content[0].text])).toEqual([
      [1, null, 'Name a color'],
      [2, 1, 'Blue'],
      [3, 1, 'Green'],
      [4, 3, 'Another?'],
      [5, 4, 'Red'],
    ]);
    expect(tree.path).toEqual([1, 3, 4, 5]);
    const turns = (await api.get(`/v1/sessions/${res.body.id}/turns`)).body.data;
    expect(turns[0].regens).toEqual([2, 3]);
  });

  it('refuses bad input with 400 naming the field, and leaves nothing behind', async () => {
    const count = async () => (await api.get('/v1/sessions/count')).body.count;
    const before = await count();
    const cases: Array<[unknown, string]> = [
      [{ format: 'openai', data: [{ role: 'wizard', content: 'x' }] }, 'data[0].role'],
      [{ format: 'openai', data: { messages: 'nope' } }, 'data.messages'],
      [
        { format: 'anthropic', data: [{ role: 'user', content: [{ type: 'tool_use', name: 'x' }] }] },
        'data[0].content[0].id',
      ],
      [
        {
          format: 'canopy',
          data: {
            format: 'canopy',
            version: 1,
            session: {},
            tree: {
              nodes: [{ id: 1, parentId: 2, message: { role: 'user', content: [], timestamp: 0 } }],
              path: [],
              cursors: {},
            },
          },
        },
        'data.tree.nodes[0].parentId',
      ],
      [
        { format: 'chatgpt', data: { mapping: { a: { parent: 'ghost', children: [] } } } },
        'data.mapping.a.parent',
      ],
      [
        {
          format: 'canopy',
          data: { format: 'canopy', version: 1, session: {}, tree: { nodes: [], path: [3], cursors: {} } },
        },
        'data.tree.path[0]',
      ],
    ];
    for (const [body, field] of cases) {
      const res = await api.post('/v1/sessions/import', body);
      expect({ field, status: res.status, got: res.body.error?.details?.field }).toEqual({
        field,
        status: 400,
        got: field,
      });
    }
    expect(await count()).toBe(before);
  });

  it('exports requests the providers take: turns of one role merged, a ChatGPT code -> tool -> answer chain one answer', async () => {
    const valid = async (id: string) => {
      const openai = (await api.get(`/v1/sessions/${id}/export?format=openai`)).body;
      const anthropic = (await api.get(`/v1/sessions/${id}/export?format=anthropic`)).body;
      expect(openAiChatRequestSchema.safeParse(openai).error?.issues).toBeUndefined();
      expect(anthropicMessagesRequestSchema.safeParse(anthropic).error?.issues).toBeUndefined();
      return { openai, anthropic };
    };
    const text = (t: string) => ({ type: 'text', text: t });

    const pair = await api.post('/v1/sessions/import', {
      format: 'openai',
      data: [
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
        { role: 'assistant', content: 'c' },
      ],
    });
    expect(pair.status).toBe(201);
    const exported = await valid(pair.body.id);
    expect(exported.anthropic.messages).toEqual([
      { role: 'user', content: [text('a'), text('b')] },
      { role: 'assistant', content: [text('c')] },
    ]);
    expect(exported.openai.messages.map((m: any) => m.role)).toEqual(['user', 'user', 'assistant']);

    const message = (role: string, time: number, content: unknown, extra: object = {}) => ({
      author: { role },
      create_time: time,
      content,
      ...extra,
    });
    const chain = await api.post('/v1/sessions/import', {
      format: 'chatgpt',
      data: {
        mapping: {
          root: { parent: null, children: ['u'], message: null },
          u: {
            parent: 'root',
            children: ['code'],
            message: message('user', 1, { content_type: 'text', parts: ['Sum 1..10'] }),
          },
          code: {
            parent: 'u',
            children: ['tool'],
            message: message(
              'assistant',
              2,
              { content_type: 'code', language: 'python', text: 'sum(range(11))' },
              { recipient: 'python' },
            ),
          },
          tool: {
            parent: 'code',
            children: ['answer'],
            message: message('tool', 3, { content_type: 'execution_output', text: '55' }),
          },
          answer: {
            parent: 'tool',
            children: [],
            message: message('assistant', 4, { content_type: 'text', parts: ['It is 55.'] }),
          },
        },
        current_node: 'answer',
      },
    });
    expect(chain.status).toBe(201);
    expect((await valid(chain.body.id)).anthropic.messages).toEqual([
      { role: 'user', content: [text('Sum 1..10')] },
      { role: 'assistant', content: [text('```python\nsum(range(11))\n```'), text('It is 55.')] },
    ]);

    // A tree holding what imports refuse (kept by an older Canopy): its exports leave out what cannot be sent.
    const legacy = await api.post('/v1/sessions/import', {
      format: 'canopy',
      data: {
        format: 'canopy',
        version: 1,
        session: {},
        tree: {
          nodes: [
            {
              id: 1,
              parentId: null,
              message: {
                role: 'user',
                content: [
                  { type: 'tool_result', toolUseId: 'nobody', content: 'x', isError: false },
                  text('go'),
                ],
                timestamp: 0,
              },
            },
            {
              id: 2,
              parentId: 1,
              message: {
                role: 'assistant',
                content: [{ type: 'tool_use', id: 'call 1', name: 'f', input: '{not json' }],
                timestamp: 0,
              },
            },
            {
              id: 3,
              parentId: 2,
              message: {
                role: 'user',
                content: [{ type: 'tool_result', toolUseId: 'call 1', content: 'ok', isError: false }],
                timestamp: 0,
              },
            },
            { id: 4, parentId: 3, message: { role: 'assistant', content: [text('done')], timestamp: 0 } },
          ],
          path: [1, 2, 3, 4],
          cursors: { '1': 2, '2': 3, '3': 4 },
        },
      },
    });
    expect(legacy.status).toBe(201);
    expect((await valid(legacy.body.id)).anthropic.messages).toEqual([
      { role: 'user', content: [text('go')] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_1', name: 'f', input: { value: '{not json' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'ok' }] },
      { role: 'assistant', content: [text('done')] },
    ]);
  });

  it('refuses orphan tool results and arguments that are no JSON with 400 naming the message, one or in bulk', async () => {
    const count = async () => (await api.get('/v1/sessions/count')).body.count;
    const before = await count();
    const cases: Array<[unknown, string]> = [
      [{ format: 'openai', data: [{ role: 'tool', tool_call_id: 'nobody' }] }, 'data[0].tool_call_id'],
      [
        {
          format: 'anthropic',
          data: {
            messages: [
              { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nobody', content: 'x' }] },
            ],
          },
        },
        'data.messages[0].content[0].tool_use_id',
      ],
      [
        {
          format: 'openai',
          data: [
            { role: 'user', content: 'hi' },
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{not json' } }],
            },
            { role: 'tool', tool_call_id: 'a', content: 'ok' },
          ],
        },
        'data[1].tool_calls[0].function.arguments',
      ],
    ];
    for (const [body, field] of cases) {
      const res = await api.post('/v1/sessions/import', body);
      expect({
        field,
        status: res.status,
        code: res.body.error?.code,
        got: res.body.error?.details?.field,
      }).toEqual({
        field,
        status: 400,
        code: 'bad_request',
        got: field,
      });
    }
    const bulk = await api.request(
      'POST',
      '/v1/import?format=openai',
      [
        JSON.stringify([{ role: 'user', content: 'fine' }]),
        JSON.stringify([{ role: 'tool', tool_call_id: 'nobody', content: 'x' }]),
      ].join('\n'),
      NDJSON,
    );
    expect(lines(bulk.body as string)).toEqual([
      { line: 1, ok: true, id: expect.any(String), nodes: 1 },
      {
        line: 2,
        ok: false,
        error: { code: 'bad_request', message: expect.any(String), field: 'data[0].tool_call_id' },
      },
    ]);
    expect(await count()).toBe(before + 1);
  });

  it('streams every session as NDJSON, resumable by cursor, and imports NDJSON line by line', async () => {
    const all = await fetch(`${t.url}/v1/export?metadata.team=ops`, {
      headers: { authorization: `Bearer ${api.credential}` },
    });
    expect(all.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const docs = lines(await all.text());
    expect(docs.map((d) => d.session.id)).toEqual([ids.deploy]);

    const everything = lines((await api.get('/v1/export')).body as string);
    expect(everything.length).toBeGreaterThan(5);
    const cursor = Buffer.from(
      JSON.stringify({ createdAt: everything[1].session.createdAt, id: everything[1].session.id }),
    ).toString('base64url');
    const rest = lines((await api.get(`/v1/export?cursor=${cursor}`)).body as string);
    expect(rest.map((d) => d.session.id)).toEqual(everything.slice(2).map((d) => d.session.id));
    expect(lines((await alice.get('/v1/export')).body as string).map((d) => d.session.userId)).toEqual([
      'alice',
      'alice',
    ]);

    // Into a new tenant: good lines imported, bad ones refused by line and field, nothing half-imported.
    const target = (await newTenant(t, 'target')).api;
    const broken = { ...everything[0], tree: { ...everything[0].tree, path: [99] } };
    const body = [
      JSON.stringify(everything[0]),
      '{not json',
      '',
      JSON.stringify(broken),
      JSON.stringify(everything[2]),
    ].join('\n');
    const res = await target.request('POST', '/v1/import', body, NDJSON);
    expect(res.status).toBe(200);
    const reports = lines(res.body as string);
    expect(reports).toEqual([
      { line: 1, ok: true, id: everything[0].session.id, nodes: everything[0].tree.nodes.length },
      { line: 2, ok: false, error: { code: 'bad_request', message: expect.stringContaining('not JSON') } },
      {
        line: 4,
        ok: false,
        error: { code: 'bad_request', message: expect.any(String), field: 'data.tree.path[0]' },
      },
      { line: 5, ok: true, id: everything[2].session.id, nodes: everything[2].tree.nodes.length },
    ]);
    expect((await target.get('/v1/sessions/count')).body.count).toBe(2);
    expect((await target.get(`/v1/sessions/${everything[0].session.id}/export`)).body).toEqual(everything[0]);
    // JSON is not NDJSON.
    expect((await target.post('/v1/import', { format: 'canopy' })).status).toBe(415);
  });

  it('deletes many sessions by ids or filter (capped, saying whether more matched) and cancels runs in flight', async () => {
    const { api: own } = await newTenant(t, 'bulk');
    const made = [];
    for (let i = 0; i < 4; i++)
      made.push((await own.post('/v1/sessions', { model: 'mock:echo', metadata: { batch: 'x' } })).body.id);
    const busy = await conversation(own, [], { opts: { delayMs: 50 } });
    await own.post(`/v1/sessions/${busy}/prompt`, { content: 'a b c d e f g h i j k l m n o p q r s t' });
    await eventually(async () => expect((await own.get(`/v1/sessions/${busy}`)).body.status).toBe('busy'));

    const cancelled = await own.post('/v1/sessions/cancel', { filter: { status: ['busy'] } });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ cancelled: 1, more: false });
    await eventually(async () => expect((await own.get(`/v1/sessions/${busy}`)).body.status).toBe('idle'));

    const byIds = await own.post('/v1/sessions/delete', { ids: [made[0], 'no-such-session'] });
    expect(byIds.body).toEqual({ deleted: 1, ids: [made[0]], more: false });
    const capped = await own.post('/v1/sessions/delete', { filter: { metadata: { batch: 'x' } }, limit: 2 });
    expect(capped.body).toMatchObject({ deleted: 2, more: true });
    const restOf = await own.post('/v1/sessions/delete', { filter: { metadata: { batch: 'x' } } });
    expect(restOf.body).toMatchObject({ deleted: 1, more: false });
    expect((await own.get('/v1/sessions/count')).body.count).toBe(1);
    expect((await own.post('/v1/sessions/delete', { ids: [busy], filter: {} })).status).toBe(400);
    // A filter that narrows nothing would delete every session: it needs all: true, which says so.
    for (const body of [{ filter: {} }, { filter: { metadata: {} } }, {}, { ids: [busy], all: true }]) {
      const refused = await own.post('/v1/sessions/delete', body);
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe('bad_request');
    }
    expect((await own.post('/v1/sessions/cancel', { filter: {} })).status).toBe(400);
    expect((await own.get('/v1/sessions/count')).body.count).toBe(1);
    const everything = await own.post('/v1/sessions/delete', { filter: {}, all: true });
    expect(everything.body).toEqual({ deleted: 1, ids: [busy], more: false });
    expect((await own.get('/v1/sessions/count')).body.count).toBe(0);
  });
});
