// A hostile tenant against the SSRF guard. Every route that takes a URL (webhook create and update, the base URL of
// each provider key, MCP server create and update, attachment URLs in prompt, branch and resume, over HTTP and over
// the WebSocket) refuses every
// spelling of a loopback, private, link-local or reserved address with 400 naming the field (on Postgres). What was
// saved while the operator allowed it is refused again at connect once the deployment restarts without the
// allowance (embedded, same data directory): a webhook to an address literal is never sent and its delivery says it
// was refused; a provider base URL is never called and the run fails with target_refused. With
// ALLOW_PRIVATE_TARGETS naming the address, the same calls go through.

/* eslint-disable @typescript-eslint/no-unsafe-call -- JSON bodies read loosely */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, FakeLlmServer } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';
import { WebhookReceiver } from './support/webhook-receiver';
import { WsClient, wsUrl } from './support/ws-client';

/** Every spelling of a target a tenant must not reach (the URL parser turns several into 127.0.0.1). */
const HOSTILE = [
  'http://127.0.0.1:8080/',
  'http://2130706433/',
  'http://0x7f000001/',
  'http://0x7f.0.0.1/',
  'http://0177.0.0.1/',
  'http://017700000001/',
  'http://127.1/',
  'http://0.0.0.0/',
  'http://0/',
  'http://[::1]/',
  'http://[::]/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::ffff:7f00:1]/',
  'http://[::127.0.0.1]/',
  'http://169.254.169.254/latest/meta-data/',
  'http://[::ffff:169.254.169.254]/',
  'http://[fe80::1]/',
  'http://10.0.0.1/',
  'http://172.16.0.1/',
  'http://192.168.1.1/',
  'http://100.64.0.1/',
  'http://100.100.100.200/',
  'http://[fd00::1]/',
  'http://[fd00:ec2::254]/',
  'http://[64:ff9b::7f00:1]/',
  'http://[2002:7f00:1::]/',
  'http://224.0.0.1/',
  'https://localhost/',
  'http://LOCALHOST.:8080/',
];

const REFUSAL = / refused: \S+ (is|resolves to) a loopback, private, link-local or reserved address/;
const API_KEY = 'sk-hostile-tenant-0123456789';

interface Answer {
  status: number;
  code: string | undefined;
  field: unknown;
  message: string | undefined;
}

describe('every URL-taking route refuses every spelling of a private target (Postgres)', () => {
  let t: TestApp;
  let api: Api;
  let ws: WsClient;
  let sessionId: string;
  let webhookId: string;
  let mcpServerId: string;

  beforeAll(async () => {
    t = await startTestApp();
    const tenant = await newTenant(t, 'hostile');
    api = tenant.api;
    ws = await WsClient.connect(wsUrl(t.url, tenant.key));
    sessionId = (await api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    const hook = await api.post('/v1/webhooks', { url: 'https://8.8.8.8/hook', events: ['run.completed'] });
    expect(hook.status).toBe(201);
    webhookId = hook.body.id;
    // Disabled: never connected to.
    const server = await api.post('/v1/mcp-servers', {
      name: 'tools',
      url: 'https://8.8.8.8/mcp',
      enabled: false,
    });
    expect(server.status).toBe(201);
    mcpServerId = server.body.id;
  });

  afterAll(async () => {
    await ws?.close();
    await t?.close();
  });

  const http = async (method: string, path: string, body: unknown): Promise<Answer> => {
    const res = await api.request(method, path, body);
    const error = res.body?.error;
    return { status: res.status, code: error?.code, field: error?.details?.field, message: error?.message };
  };
  const attachment = (url: string) => [{ type: 'attachment', mediaType: 'image/png', url }];

  const ROUTES: Array<{ route: string; field: string; send: (url: string) => Promise<Answer> }> = [
    {
      route: 'POST /v1/webhooks',
      field: 'url',
      send: (url) => http('POST', '/v1/webhooks', { url, events: ['run.completed'] }),
    },
    {
      route: 'PATCH /v1/webhooks/{id}',
      field: 'url',
      send: (url) => http('PATCH', `/v1/webhooks/${webhookId}`, { url }),
    },
    {
      route: 'POST /v1/mcp-servers',
      field: 'url',
      send: (url) => http('POST', '/v1/mcp-servers', { name: 'hostile', url: `${url}mcp` }),
    },
    {
      route: 'PATCH /v1/mcp-servers/{id}',
      field: 'url',
      send: (url) => http('PATCH', `/v1/mcp-servers/${mcpServerId}`, { url: `${url}mcp` }),
    },
    ...['openai-compatible', 'openai', 'anthropic'].map((provider) => ({
      route: `PUT /v1/providers/${provider}`,
      field: 'baseUrl',
      send: (url: string) =>
        http('PUT', `/v1/providers/${provider}`, { apiKey: API_KEY, baseUrl: `${url}v1` }),
    })),
    {
      route: 'POST /v1/sessions/{id}/prompt',
      field: 'content.0.url',
      send: (url) => http('POST', `/v1/sessions/${sessionId}/prompt`, { content: attachment(url) }),
    },
    {
      route: 'POST /v1/sessions/{id}/branch',
      field: 'content.0.url',
      send: (url) =>
        http('POST', `/v1/sessions/${sessionId}/branch`, { nodeId: null, content: attachment(url) }),
    },
    {
      route: 'POST /v1/sessions/{id}/resume',
      field: 'decision.content.0.url',
      send: (url) =>
        http('POST', `/v1/sessions/${sessionId}/resume`, {
          decision: { type: 'result', content: attachment(url) },
        }),
    },
    {
      route: 'WebSocket prompt',
      field: 'content.0.url',
      send: async (url) => {
        const reply = await ws.request('prompt', { sessionId, content: attachment(url) });
        const error = reply.error;
        return {
          status: reply.ok ? 200 : error?.code === 'bad_request' ? 400 : 0,
          code: error?.code,
          field: error?.details?.field,
          message: error?.message,
        };
      },
    },
  ];

  it('answers 400 bad_request naming the field, saying the target was refused', async () => {
    const failures: string[] = [];
    for (const { route, field, send } of ROUTES) {
      for (const url of HOSTILE) {
        const answer = await send(url);
        if (
          answer.status !== 400 ||
          answer.code !== 'bad_request' ||
          answer.field !== field ||
          !REFUSAL.test(answer.message ?? '')
        )
          failures.push(`${route} ${url}: ${JSON.stringify(answer)}`);
      }
    }
    expect(failures).toEqual([]);
    // Nothing was stored or started by the refused requests.
    expect((await api.get('/v1/providers')).body.data).toEqual([]);
    expect((await api.get('/v1/webhooks')).body.data.map((w: { url: string }) => w.url)).toEqual([
      'https://8.8.8.8/hook',
    ]);
    expect((await api.get(`/v1/sessions/${sessionId}`)).body).toMatchObject({ head: null, path: [] });
    expect((await api.get('/v1/mcp-servers')).body.data.map((s: { url: string }) => s.url)).toEqual([
      'https://8.8.8.8/mcp',
    ]);
  });

  it('accepts the same routes with a public address', async () => {
    expect(
      (await http('POST', '/v1/webhooks', { url: 'https://1.1.1.1/h', events: ['run.completed'] })).status,
    ).toBe(201);
    expect((await http('PATCH', `/v1/webhooks/${webhookId}`, { url: 'https://1.1.1.1/x' })).status).toBe(200);
    expect(
      (await http('PATCH', `/v1/mcp-servers/${mcpServerId}`, { url: 'https://1.1.1.1/mcp' })).status,
    ).toBe(200);
    for (const provider of ['openai-compatible', 'openai', 'anthropic'])
      expect(
        (await http('PUT', `/v1/providers/${provider}`, { apiKey: API_KEY, baseUrl: 'https://8.8.8.8/v1' }))
          .status,
      ).toBe(200);
    const prompt = await http('POST', `/v1/sessions/${sessionId}/prompt`, {
      content: [{ type: 'text', text: 'look' }, ...attachment('https://8.8.8.8/cat.png')],
    });
    expect(prompt.status).toBe(202);
  });
});

describe('saved while the operator allowed it, refused at connect after a restart without it (embedded)', () => {
  let dataDir: string;
  let receiver: WebhookReceiver;
  let fake: FakeLlmServer;
  let app: TestApp | undefined;

  const FAST = { WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_RETRY_BASE_MS: '100', WEBHOOK_POLL_MS: '50' };
  const boot = async (env: Record<string, string>) => {
    await app?.close();
    app = undefined;
    app = await startTestApp({ embeddedDataDir: dataDir, env: { ...FAST, ...env } });
    return app;
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'canopy-ssrf-'));
    receiver = await WebhookReceiver.start();
    fake = await FakeLlmServer.start();
  });

  afterAll(async () => {
    await app?.close();
    await receiver?.close();
    await fake?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('never sends the webhook nor calls the provider, says why, and goes through once the operator allows it', async () => {
    // The operator allowed loopback targets: a webhook to an address literal and a provider key on the fake.
    const first = await boot({ WEBHOOK_ALLOW_PRIVATE: 'true', ALLOW_PRIVATE_TARGETS: '127.0.0.1' });
    const tenant = await newTenant(first, 'saved while allowed');
    const hook = await tenant.api.post('/v1/webhooks', {
      url: receiver.url,
      events: ['run.completed', 'run.failed'],
    });
    expect({ status: hook.status, url: hook.body.url }).toEqual({ status: 201, url: receiver.url });
    receiver.secret = hook.body.secret;
    const put = await tenant.api.request('PUT', '/v1/providers/openai-compatible', {
      apiKey: API_KEY,
      baseUrl: fake.baseUrl,
      models: ['llama'],
    });
    expect(put.status).toBe(200);

    // Restarted without the allowance.
    const strict = await boot({});
    let api = new Api(strict.url, tenant.key);
    const echo = (await api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    const done = await api.post(`/v1/sessions/${echo}/prompt`, { content: 'hello', wait: true });
    expect(done.body.status).toBe('completed');
    const refusedHook =
      'webhook URL refused: 127.0.0.1 is a loopback, private, link-local or reserved address';
    await eventually(
      async () => {
        const [delivery] = (await api.get(`/v1/webhooks/${hook.body.id}/deliveries`)).body.data;
        expect(delivery).toMatchObject({ status: 'pending', lastStatusCode: null });
        expect(delivery.attemptLog[0]).toMatchObject({ statusCode: null, error: refusedHook });
      },
      { timeoutMs: 20_000 },
    );

    const own = (await api.post('/v1/sessions', { model: 'openai-compatible:llama' })).body.id;
    fake.enqueue({ text: ['should never be asked'] });
    const failed = await api.post(`/v1/sessions/${own}/prompt`, { content: 'hi', wait: true });
    expect(failed.body.status).toBe('error');
    const run = (await api.get(`/v1/runs/${failed.body.runId}`)).body;
    expect(run).toMatchObject({
      status: 'error',
      attempts: 1,
      error: {
        code: 'target_refused',
        message:
          'model provider URL refused: 127.0.0.1 is a loopback, private, link-local or reserved address',
      },
    });
    expect(fake.requests).toEqual([]);
    expect(receiver.attempts).toEqual([]);

    // The operator names the address: the provider is called, the held deliveries go out.
    const allowed = await boot({ ALLOW_PRIVATE_TARGETS: '127.0.0.1' });
    api = new Api(allowed.url, tenant.key);
    const ok = await api.post(`/v1/sessions/${own}/prompt`, { content: 'hi again', wait: true });
    expect({ status: ok.body.status, text: ok.body.finalResponse }).toEqual({
      status: 'completed',
      text: 'should never be asked',
    });
    expect(fake.requests).toHaveLength(1);
    await eventually(() => expect(receiver.ofType('run.completed').length).toBeGreaterThanOrEqual(1), {
      timeoutMs: 20_000,
    });
    expect(receiver.attempts.every((a) => a.verified)).toBe(true);
  }, 180_000);
});
