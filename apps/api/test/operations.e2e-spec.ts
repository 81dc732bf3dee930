// The operational surface every deployment relies on, over real HTTP: health, readiness, API docs, the error
// model (codes, request ids, no stack traces) and body limits.

import { Client } from 'pg';
import { adminUrl } from '@canopy/testing';
import { startTestApp, type TestApp } from './support/test-app';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ env: { HTTP_BODY_LIMIT: '2kb' } });
});

afterAll(async () => {
  await t?.close();
});

const expectErrorBody = (body: unknown, code: string) => {
  expect(body).toEqual({
    error: expect.objectContaining({ code, message: expect.any(String) }),
    requestId: expect.any(String),
  });
  expect(JSON.stringify(body)).not.toMatch(/\bat \S+ \(|node_modules|\.ts:\d+/); // no stack traces
};

describe('health and readiness', () => {
  it('GET /healthz answers ok with a request id', async () => {
    const res = await fetch(`${t.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('GET /readyz checks the database', async () => {
    const res = await fetch(`${t.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', checks: { database: 'ok' } });
  });
});

describe('API documentation', () => {
  it('serves the OpenAPI UI at /docs', async () => {
    const res = await fetch(`${t.url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(await res.text()).toMatch(/swagger/i);
  });

  it('serves the OpenAPI document at /docs/openapi.json listing the routes', async () => {
    const res = await fetch(`${t.url}/docs/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/healthz', '/readyz']));
  });
});

describe('the error model', () => {
  it('answers an unknown route with not_found and the request id of the response header', async () => {
    const res = await fetch(`${t.url}/v1/nope`);
    expect(res.status).toBe(404);
    const body = (await res.json()) as { requestId: string };
    expectErrorBody(body, 'not_found');
    expect(body.requestId).toBe(res.headers.get('x-request-id'));
  });

  it('keeps a sane incoming x-request-id and replaces an unsafe one', async () => {
    const kept = await fetch(`${t.url}/v1/nope`, { headers: { 'x-request-id': 'trace-42.a:b' } });
    expect(((await kept.json()) as { requestId: string }).requestId).toBe('trace-42.a:b');
    const replaced = await fetch(`${t.url}/v1/nope`, { headers: { 'x-request-id': 'bad id\twith <tags>' } });
    const body = (await replaced.json()) as { requestId: string };
    expect(body.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers malformed JSON with bad_request (and its request id)', async () => {
    const res = await fetch(`${t.url}/readyz`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'malformed-1' },
      body: '{"unterminated": ',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { requestId: string };
    expectErrorBody(body, 'bad_request');
    expect(body.requestId).toBe('malformed-1');
  });

  it('answers a body over the configured limit with payload_too_large', async () => {
    const res = await fetch(`${t.url}/readyz`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'x'.repeat(4096) }),
    });
    expect(res.status).toBe(413);
    expectErrorBody(await res.json(), 'payload_too_large');
  });
});

describe('readiness without a database', () => {
  it('answers 503 unavailable once the database is gone, while /healthz stays up', async () => {
    const lonely = await startTestApp();
    try {
      expect((await fetch(`${lonely.url}/readyz`)).status).toBe(200);
      const admin = new Client({ connectionString: adminUrl() });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE ${lonely.database!.name} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
      const res = await fetch(`${lonely.url}/readyz`);
      expect(res.status).toBe(503);
      expectErrorBody(await res.json(), 'unavailable');
      expect((await fetch(`${lonely.url}/healthz`)).status).toBe(200);
    } finally {
      await lonely.close();
    }
  });
});
