// A tenant's settings over HTTP: GET and PUT /v1/settings (a tenant key; user tokens answer 403) hold the default
// context policy its new sessions take. A session created without opts.context has the default copied into its opts
// (so it shows the policy it runs with, and GET …/context plans with it); a later change of the default leaves it
// as it was. So do the default MCP servers (opts.mcpServers), each of which must be one of the tenant's servers.
// The policy is checked as opts.context is (its summaryModel must be a model this tenant can use: a
// provider key of its own makes one usable for it alone); each change is audited; another tenant never sees it.

import { FakeLlmServer } from '@canopy/testing';
import { newTenant, type ApiResponse } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

let t: TestApp;
let fake: FakeLlmServer;

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  // A tenant's own provider key leads to the fake on loopback, which the operator allows.
  t = await startTestApp({ env: { ALLOW_PRIVATE_TARGETS: '127.0.0.1' } });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

/** The error's status, code and field (named by the service, or by the validation's first issue). */
function expectError(res: ApiResponse, status: number, code: string, field?: string): void {
  const details = res.body?.error?.details as
    { field?: string; issues?: Array<{ path: string }> } | undefined;
  expect({
    status: res.status,
    code: res.body?.error?.code,
    field: details?.field ?? details?.issues?.[0]?.path,
  }).toEqual({ status, code, field });
}

it('new sessions take the tenant’s default context policy, copied at creation; a change affects new ones only', async () => {
  const { api } = await newTenant(t, 'settings');
  expect((await api.get('/v1/settings')).body).toEqual({
    context: null,
    mcpServers: null,
    telemetryUserId: false,
    updatedAt: null,
  });
  const plain = await api.post('/v1/sessions', { model: 'mock:echo' });
  expect(plain.body.opts).toEqual({});

  const truncate = { strategy: 'truncate', keepFirstTurns: 1 };
  const put = await api.request('PUT', '/v1/settings', { context: truncate });
  expect(put.status).toBe(200);
  expect(put.body).toEqual({
    context: truncate,
    mcpServers: null,
    telemetryUserId: false,
    updatedAt: expect.any(String),
  });
  expect((await api.get('/v1/settings')).body).toEqual(put.body);

  // Without opts.context: the default, beside the other options given.
  const defaulted = await api.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 0 } });
  expect(defaulted.status).toBe(201);
  expect(defaulted.body.opts).toEqual({ delayMs: 0, context: truncate });
  expect((await api.get(`/v1/sessions/${defaulted.body.id as string}/context`)).body.strategy).toBe(
    'truncate',
  );
  // Its own opts.context wins, whole (nothing of the default is merged into it).
  const own = await api.post('/v1/sessions', { model: 'mock:echo', opts: { context: { strategy: 'none' } } });
  expect(own.body.opts).toEqual({ context: { strategy: 'none' } });

  // A change: new sessions take it, earlier ones keep what they were created with.
  const summarize = { strategy: 'summarize', triggerRatio: 0.5 };
  expect((await api.request('PUT', '/v1/settings', { context: summarize })).status).toBe(200);
  expect((await api.post('/v1/sessions', { model: 'mock:echo' })).body.opts).toEqual({ context: summarize });
  expect((await api.get(`/v1/sessions/${defaulted.body.id as string}`)).body.opts.context).toEqual(truncate);
  expect((await api.get(`/v1/sessions/${plain.body.id as string}`)).body.opts).toEqual({});

  // A body without the field leaves it; null removes it.
  expect((await api.request('PUT', '/v1/settings', {})).body.context).toEqual(summarize);
  const removed = await api.request('PUT', '/v1/settings', { context: null });
  expect(removed.body).toEqual({
    context: null,
    mcpServers: null,
    telemetryUserId: false,
    updatedAt: expect.any(String),
  });
  expect((await api.post('/v1/sessions', { model: 'mock:echo' })).body.opts).toEqual({});

  // Each change is audited with what it was and what it became.
  const audit = (await api.get('/v1/audit?action=settings.')).body.data as Array<Record<string, unknown>>;
  expect(audit.map((e) => [e.action, e.before, e.after]).reverse()).toEqual([
    ['settings.update', settingsOf(null), settingsOf(truncate)],
    ['settings.update', settingsOf(truncate), settingsOf(summarize)],
    ['settings.update', settingsOf(summarize), settingsOf(summarize)],
    ['settings.update', settingsOf(summarize), settingsOf(null)],
  ]);
});

/** The settings as the audit log records them, with no MCP servers and no telemetry consent. */
function settingsOf(context: unknown) {
  return { context, mcpServers: null, telemetryUserId: false };
}

it("keeps the tenant's consent to its end users' ids on its runs' spans: off until set, a boolean", async () => {
  const { api } = await newTenant(t, 'settings telemetry');
  expect((await api.get('/v1/settings')).body.telemetryUserId).toBe(false);
  const put = await api.request('PUT', '/v1/settings', { telemetryUserId: true });
  expect(put.status).toBe(200);
  expect(put.body).toMatchObject({ context: null, mcpServers: null, telemetryUserId: true });
  // Other fields leave it as it is; false withdraws it.
  expect(
    (await api.request('PUT', '/v1/settings', { context: { strategy: 'none' } })).body.telemetryUserId,
  ).toBe(true);
  expectError(
    await api.request('PUT', '/v1/settings', { telemetryUserId: 'yes' }),
    400,
    'bad_request',
    'telemetryUserId',
  );
  expectError(
    await api.request('PUT', '/v1/settings', { telemetryUserId: null }),
    400,
    'bad_request',
    'telemetryUserId',
  );
  expect((await api.request('PUT', '/v1/settings', { telemetryUserId: false })).body.telemetryUserId).toBe(
    false,
  );
});

it('checks the policy as opts.context is: its summary model must be one the tenant can use', async () => {
  const a = await newTenant(t, 'settings a');
  const b = await newTenant(t, 'settings b');
  const model = 'openai-compatible:summarizer';
  const policy = { strategy: 'summarize', summaryModel: model };
  for (const tenant of [a, b])
    expectError(
      await tenant.api.request('PUT', '/v1/settings', { context: policy }),
      400,
      'bad_request',
      'context.summaryModel',
    );
  expectError(
    await a.api.request('PUT', '/v1/settings', { context: { strategy: 'summarize', keepFirstTurns: -1 } }),
    400,
    'bad_request',
    'context.keepFirstTurns',
  );
  expectError(
    await a.api.request('PUT', '/v1/settings', { context: { strategy: 'none' }, other: 1 }),
    400,
    'bad_request',
    '',
  );
  expect((await a.api.get('/v1/settings')).body.context).toBeNull();

  // A's own key for the provider makes the model usable for A (not for B).
  const key = await a.api.request('PUT', '/v1/providers/openai-compatible', {
    apiKey: 'sk-settings-0123456789',
    baseUrl: fake.baseUrl,
    models: ['summarizer'],
  });
  expect(key.status).toBe(200);
  expect((await a.api.request('PUT', '/v1/settings', { context: policy })).status).toBe(200);
  expect((await a.api.post('/v1/sessions', { model: 'mock:echo' })).body.opts).toEqual({ context: policy });
  expectError(
    await b.api.request('PUT', '/v1/settings', { context: policy }),
    400,
    'bad_request',
    'context.summaryModel',
  );
  // B's sessions never take A's default; B reads its own settings.
  expect((await b.api.get('/v1/settings')).body).toEqual({
    context: null,
    mcpServers: null,
    telemetryUserId: false,
    updatedAt: null,
  });
  expect((await b.api.post('/v1/sessions', { model: 'mock:echo' })).body.opts).toEqual({});
});

it('is the tenant’s: user tokens answer 403, and a session a user token creates takes the default', async () => {
  const { api } = await newTenant(t, 'settings users');
  const token = (await api.post('/v1/tokens', { userId: 'alice' })).body.token as string;
  expectError(await api.as(token).get('/v1/settings'), 403, 'forbidden');
  expectError(
    await api.as(token).request('PUT', '/v1/settings', { context: { strategy: 'none' } }),
    403,
    'forbidden',
  );
  expect((await api.request('PUT', '/v1/settings', { context: { strategy: 'truncate' } })).status).toBe(200);
  const created = await api.as(token).post('/v1/sessions', { model: 'mock:echo' });
  expect(created.body).toMatchObject({ userId: 'alice', opts: { context: { strategy: 'truncate' } } });
});

it('new sessions take the tenant’s default MCP servers, checked against its servers, copied at creation', async () => {
  const a = await newTenant(t, 'settings mcp a');
  const b = await newTenant(t, 'settings mcp b');
  // Saving a server does not connect to it: a loopback URL nothing answers is enough here.
  for (const name of ['docs', 'search']) {
    const created = await a.api.post('/v1/mcp-servers', { name, url: 'http://127.0.0.1:9/mcp' });
    expect(created.status).toBe(201);
  }

  // Each name must be one of the tenant's servers: the error names the entry.
  expectError(
    await a.api.request('PUT', '/v1/settings', { mcpServers: ['docs', 'nope'] }),
    400,
    'bad_request',
    'mcpServers.1',
  );
  expectError(
    await b.api.request('PUT', '/v1/settings', { mcpServers: ['docs'] }),
    400,
    'bad_request',
    'mcpServers.0',
  );
  expectError(
    await a.api.request('PUT', '/v1/settings', { mcpServers: ['Bad Name'] }),
    400,
    'bad_request',
    'mcpServers.0',
  );
  expect((await a.api.get('/v1/settings')).body.mcpServers).toBeNull();

  const put = await a.api.request('PUT', '/v1/settings', { mcpServers: ['docs', 'search'] });
  expect(put.status).toBe(200);
  expect(put.body).toEqual({
    context: null,
    mcpServers: ['docs', 'search'],
    telemetryUserId: false,
    updatedAt: expect.any(String),
  });
  // Setting the context leaves the servers, and the other way round.
  const truncate = { strategy: 'truncate' };
  expect((await a.api.request('PUT', '/v1/settings', { context: truncate })).body).toMatchObject({
    context: truncate,
    mcpServers: ['docs', 'search'],
  });

  // Without opts.mcpServers: the default, beside the other defaults and options.
  const defaulted = await a.api.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 0 } });
  expect(defaulted.status).toBe(201);
  expect(defaulted.body.opts).toEqual({ delayMs: 0, context: truncate, mcpServers: ['docs', 'search'] });
  // Its own list wins, an empty one included.
  const own = await a.api.post('/v1/sessions', { model: 'mock:echo', opts: { mcpServers: ['search'] } });
  expect(own.body.opts).toEqual({ context: truncate, mcpServers: ['search'] });
  const none = await a.api.post('/v1/sessions', { model: 'mock:echo', opts: { mcpServers: [] } });
  expect(none.body.opts).toEqual({ context: truncate, mcpServers: [] });

  // A server deleted since is left out of new sessions (it does not make their creation fail).
  const servers = (await a.api.get('/v1/mcp-servers')).body.data as Array<{ id: string; name: string }>;
  const search = servers.find((s) => s.name === 'search')!;
  expect((await a.api.request('DELETE', `/v1/mcp-servers/${search.id}`)).status).toBe(204);
  const after = await a.api.post('/v1/sessions', { model: 'mock:echo' });
  expect(after.status).toBe(201);
  expect(after.body.opts).toEqual({ context: truncate, mcpServers: ['docs'] });
  // The earlier session keeps what it was created with.
  expect((await a.api.get(`/v1/sessions/${defaulted.body.id as string}`)).body.opts.mcpServers).toEqual([
    'docs',
    'search',
  ]);

  // null removes the default; B never took A's.
  expect((await a.api.request('PUT', '/v1/settings', { mcpServers: null })).body.mcpServers).toBeNull();
  expect((await a.api.post('/v1/sessions', { model: 'mock:echo' })).body.opts).toEqual({ context: truncate });
  expect((await b.api.post('/v1/sessions', { model: 'mock:echo' })).body.opts).toEqual({});
  const audit = (await a.api.get('/v1/audit?action=settings.')).body.data as Array<Record<string, unknown>>;
  expect(audit[0]).toMatchObject({
    before: { context: truncate, mcpServers: ['docs', 'search'] },
    after: { context: truncate, mcpServers: null },
  });
});
