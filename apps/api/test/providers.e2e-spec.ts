// Bring your own key over HTTP: a tenant stores its own provider key (here for an OpenAI-compatible server, the
// local fake), its runs on that provider then call with its key, GET /v1/models lists its models (for it only),
// and the key is never returned, audited or stored in clear; without a deployment encryption key the routes
// answer 503. Another tenant stays without the provider.

/* eslint-disable @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return -- JSON bodies read loosely */

import { Client } from 'pg';
import { FakeLlmServer } from '@canopy/testing';
import { newTenant, type ApiResponse } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

let t: TestApp;
let fake: FakeLlmServer;

const SECRET = 'sk-tenant-own-key-0123456789';

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  // The fake listens on loopback, where tenant URLs may lead only when the operator allows it.
  t = await startTestApp({ env: { ALLOW_PRIVATE_TARGETS: '127.0.0.1' } });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

it('a tenant’s own key makes its provider usable for it alone, encrypted at rest, never shown', async () => {
  const a = await newTenant(t, 'byok a');
  const b = await newTenant(t, 'byok b');
  const model = 'openai-compatible:tenant-llama';
  expectError(await a.api.post('/v1/sessions', { model }), 400, 'bad_request');

  const put = await a.api.request('PUT', '/v1/providers/openai-compatible', {
    apiKey: SECRET,
    baseUrl: fake.baseUrl,
    models: ['tenant-llama'],
  });
  expect(put.status).toBe(200);
  expect(put.body).toMatchObject({ provider: 'openai-compatible', baseUrl: fake.baseUrl, keyHint: '6789' });
  expect(JSON.stringify(put.body)).not.toContain(SECRET);
  expect((await a.api.get('/v1/providers')).body.data).toHaveLength(1);
  expect(JSON.stringify((await a.api.get('/v1/providers/openai-compatible')).body)).not.toContain(SECRET);

  // Its models are listed for it, not for another tenant.
  const ids = (api: typeof a.api) =>
    api.get('/v1/models').then((r) => r.body.data.map((m: { id: string }) => m.id));
  expect(await ids(a.api)).toContain(model);
  expect(await ids(b.api)).not.toContain(model);

  // Its runs call the provider with its key.
  fake.enqueue({ text: ['Hello ', 'from your key'], usage: { inputTokens: 3, outputTokens: 4 } });
  const session = await a.api.post('/v1/sessions', { model });
  expect(session.status).toBe(201);
  const run = await a.api.post(`/v1/sessions/${session.body.id}/prompt`, { content: 'hi', wait: true });
  expect(run.status).toBe(200);
  expect(run.body.finalResponse).toBe('Hello from your key');
  expect(fake.requests.at(-1)?.headers.authorization).toBe(`Bearer ${SECRET}`);
  // B has no such provider.
  expectError(await b.api.post('/v1/sessions', { model }), 400, 'bad_request');
  expectError(await b.api.get('/v1/providers/openai-compatible'), 404, 'not_found');

  // At rest: sealed, not the key.
  const db = new Client({ connectionString: t.database!.url });
  await db.connect();
  try {
    await db.query(`SELECT set_config('canopy.tenant_id', $1, false)`, [a.tenantId]);
    const { rows } = await db.query<{ encrypted_key: string }>('SELECT encrypted_key FROM provider_keys');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.encrypted_key).toMatch(/^v1\./);
    expect(rows[0]!.encrypted_key).not.toContain(SECRET);
  } finally {
    await db.end();
  }
  // Audited without the key.
  const audit = await a.api.get('/v1/audit?action=provider_key.');
  expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(['provider_key.create']);
  expect(JSON.stringify(audit.body)).not.toContain(SECRET);

  // Removed: the provider is unusable for it again.
  expect((await a.api.delete('/v1/providers/openai-compatible')).status).toBe(204);
  expect(await ids(a.api)).not.toContain(model);
  expectError(await a.api.post('/v1/sessions', { model }), 400, 'bad_request');
});

it('refuses unknown providers and an openai-compatible key without its base URL', async () => {
  const a = await newTenant(t, 'byok bad');
  expectError(await a.api.request('PUT', '/v1/providers/nope', { apiKey: SECRET }), 404, 'not_found');
  expectError(
    await a.api.request('PUT', '/v1/providers/openai-compatible', { apiKey: SECRET }),
    400,
    'bad_request',
  );
  const token = (await a.api.post('/v1/tokens', { userId: 'u' })).body.token;
  expectError(await a.api.as(token).get('/v1/providers'), 403, 'forbidden');
});

describe('without an encryption key (an external database and no CANOPY_ENCRYPTION_KEY)', () => {
  let bare: TestApp;
  afterAll(async () => {
    await bare?.close();
  });

  it('answers 503 to storing a key, naming the variable', async () => {
    bare = await startTestApp({ env: { CANOPY_ENCRYPTION_KEY: '' } });
    const a = await newTenant(bare, 'no key');
    const res = await a.api.request('PUT', '/v1/providers/openai', { apiKey: SECRET });
    expectError(res, 503, 'unavailable');
    expect(res.body.error.message).toContain('CANOPY_ENCRYPTION_KEY');
  });
});
