// What the playground's pickers and the dashboard's charts read, through the SDK against the real service: the
// models a deployment offers (mocks always, each configured provider's listed models), the admin's tenants by
// name, and the run statistics' per-minute tokens and latency, latest runs with titles and live sessions over time.

import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../../apps/api/test/support/test-app';
import { Canopy } from './index';

let t: TestApp;
let admin: Canopy;

beforeAll(async () => {
  t = await startTestApp({
    env: {
      // OpenAI configured with its own list; Anthropic left unconfigured (its default list must not show).
      OPENAI_API_KEY: 'sk-test',
      OPENAI_MODELS: 'gpt-4.1, gpt-4.1-mini',
      OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:9/v1',
      OPENAI_COMPATIBLE_MODELS: 'llama3.1:8b',
    },
  });
  admin = new Canopy({ baseUrl: t.url, credential: TEST_ADMIN_KEY });
});

afterAll(async () => {
  await t?.close();
});

describe('GET /v1/models', () => {
  it('lists the mocks and the configured providers’ models, with their provider and whether they take tools', async () => {
    const tenant = await admin.admin.createTenant('models');
    const canopy = new Canopy({ baseUrl: t.url, credential: tenant.apiKey });
    const models = await canopy.models();
    expect(models.map((m) => [m.id, m.provider, m.tools])).toEqual([
      ['mock:echo', 'mock', false],
      ['mock:script', 'mock', true],
      ['openai:gpt-4.1', 'openai', true],
      ['openai:gpt-4.1-mini', 'openai', true],
      ['openai-compatible:llama3.1:8b', 'openai-compatible', true],
    ]);
    expect(models[0]!.description).toMatch(/Echo/);
    // Every listed model is one a session accepts.
    for (const m of models) {
      const { info } = await canopy.sessions.create({ model: m.id });
      expect(info.model).toBe(m.id);
    }
    // A user token and the admin key read the same list.
    const { token } = await canopy.tokens.create('reader');
    expect(await new Canopy({ baseUrl: t.url, credential: token }).models()).toEqual(models);
    expect(await admin.models()).toEqual(models);
  });

  it('lists only the mocks (with the defaults of none) when no provider is configured', async () => {
    const bare = await startTestApp();
    try {
      const models = await new Canopy({ baseUrl: bare.url, credential: TEST_ADMIN_KEY }).models();
      expect(models.map((m) => m.id)).toEqual(['mock:echo', 'mock:script']);
    } finally {
      await bare.close();
    }
  });
});

describe('GET /v1/tools', () => {
  it('lists the registered server tools: the demo tools of the single-process runtime', async () => {
    const tools = await admin.serverTools();
    expect(tools.map((x) => [x.name, x.approval])).toEqual([
      ['calculator', false],
      ['clock', false],
      ['deploy', true],
    ]);
    expect(tools[0]!.inputSchema).toMatchObject({ properties: { expression: { type: 'string' } } });
    // What it lists, a session can enable.
    const tenant = await admin.admin.createTenant('tools');
    const canopy = new Canopy({ baseUrl: t.url, credential: tenant.apiKey });
    const { info } = await canopy.sessions.create({
      model: 'mock:script',
      opts: { serverTools: tools.map((x) => x.name), script: [{ text: 'ok' }] },
    });
    expect(info.opts.serverTools).toEqual(['calculator', 'clock', 'deploy']);
  });
});

describe('GET /v1/admin/tenants', () => {
  it('names every tenant for the admin, and is the admin’s only', async () => {
    const made = await admin.admin.createTenant('zeta tenant');
    const tenants = await admin.admin.listTenants(1_000);
    expect(tenants).toEqual(
      expect.arrayContaining([
        { id: made.id, name: 'zeta tenant', createdAt: expect.any(String), disabled: false },
      ]),
    );
    const names = tenants.map((x) => x.name);
    expect(names).toEqual([...names].sort());
    expect(await admin.admin.listTenants(1)).toHaveLength(1);
    const asTenant = new Canopy({ baseUrl: t.url, credential: made.apiKey });
    await expect(asTenant.admin.listTenants()).rejects.toMatchObject({ code: 'forbidden' });
  });
});

describe('GET /v1/stats for charts', () => {
  it('adds tokens and latency per minute, the latest runs with titles, and live sessions over time', async () => {
    const tenant = await admin.admin.createTenant('charts');
    const canopy = new Canopy({ baseUrl: t.url, credential: tenant.apiKey });
    const { session } = await canopy.sessions.create({ model: 'mock:echo', title: 'Charted chat' });
    await session.run('one two three');
    const failing = await canopy.sessions.create({
      model: 'mock:script',
      title: 'Failing chat',
      opts: { script: [{ error: 'model exploded' }] },
    });
    await failing.session.run('fail');
    // A session held live (a controller subscribed) shows in the live samples.
    const live = session.turns();
    await live.ready();

    const stats = await canopy.stats(5);
    const total = (key: 'totalTokens' | 'outputTokens') => stats.perMinute.reduce((n, m) => n + m[key], 0);
    const usage = stats.usageByTenant[0]!;
    expect(total('totalTokens')).toBe(usage.totalTokens);
    expect(total('outputTokens')).toBe(usage.outputTokens);
    const finishedMinutes = stats.perMinute.filter((m) => m.finished > 0);
    expect(finishedMinutes.length).toBeGreaterThan(0);
    for (const m of finishedMinutes) {
      expect(m.latencyP50Ms).toEqual(expect.any(Number));
      expect(m.latencyP95Ms!).toBeGreaterThanOrEqual(m.latencyP50Ms!);
    }
    expect(stats.perMinute.filter((m) => m.finished === 0).every((m) => m.latencyP50Ms === null)).toBe(true);

    expect(stats.recentRuns.map((r) => [r.sessionTitle, r.status])).toEqual([
      ['Failing chat', 'error'],
      ['Charted chat', 'completed'],
    ]);
    expect(stats.recentRuns[0]).toMatchObject({
      sessionId: failing.session.id,
      tenantName: 'charts',
      error: { code: expect.any(String), message: expect.stringContaining('model exploded') },
    });
    expect(stats.recentRuns[1]!.totalTokens).toBeGreaterThan(0);

    const now = stats.liveSessions.at(-1)!;
    expect(now.live).toBeGreaterThanOrEqual(1);
    expect(Date.parse(now.minute)).toBeGreaterThanOrEqual(Date.parse(stats.since));
    await live.close();

    // The admin's view has every tenant's runs, by name.
    const all = await admin.stats(5);
    expect(all.recentRuns.some((r) => r.tenantName === 'charts' && r.sessionTitle === 'Charted chat')).toBe(
      true,
    );
    expect(all.liveSessions.at(-1)!.live).toBeGreaterThanOrEqual(0);
  });
});
