// Webhooks end to end on the embedded runtime's shape (one api that sends its own outbox): a local receiver
// verifies every Standard Webhooks signature and sees each event once per attempt; a receiver that fails, hangs
// and comes back still gets the delivery (retried with backoff, each attempt listed with its code or error); a
// redirect is not followed; an endpoint failing for the whole retry window is disabled and says why; a delivery
// can be sent again by hand; and URLs reaching loopback, private or metadata addresses are refused unless the
// deployment allows them.

/* eslint-disable @typescript-eslint/no-unsafe-call -- JSON bodies read loosely */

import { eventually } from '@canopy/testing';
import { Api, newTenant, type ApiResponse } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';
import { WebhookReceiver } from './support/webhook-receiver';

let t: TestApp;
let strict: TestApp;
let receiver: WebhookReceiver;

const FAST = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_TIMEOUT_MS: '400',
  WEBHOOK_RETRY_BASE_MS: '100',
  WEBHOOK_POLL_MS: '50',
};

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  t = await startTestApp({ env: FAST });
  strict = await startTestApp();
});

afterAll(async () => {
  await t?.close();
  await strict?.close();
  await receiver?.close();
});

function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

async function hook(api: Api, events: string[], url = receiver.url) {
  const res = await api.post('/v1/webhooks', { url, events, description: 'test receiver' });
  expect(res.status).toBe(201);
  expect(res.body.secret).toMatch(/^whsec_/);
  receiver.secret = res.body.secret;
  return res.body as { id: string; secret: string };
}

describe('delivery', () => {
  it('signs each event, sends it once, in the order things happened, and hides the secret afterwards', async () => {
    const tenant = await newTenant(t, 'hooked');
    const created = await hook(tenant.api, [
      'session.created',
      'session.title',
      'run.completed',
      'session.deleted',
    ]);
    const session = await tenant.api.post('/v1/sessions', { model: 'mock:echo', userId: 'alice' });
    const id = session.body.id;
    const run = await tenant.api.post(`/v1/sessions/${id}/prompt`, { content: 'private words', wait: true });
    expect(run.status).toBe(200);
    expect((await tenant.api.patch(`/v1/sessions/${id}`, { title: 'renamed' })).status).toBe(200);
    expect((await tenant.api.delete(`/v1/sessions/${id}`)).status).toBe(204);

    await eventually(() =>
      expect(receiver.attempts.filter((a) => a.data.sessionId === id).map((a) => a.type)).toEqual(
        expect.arrayContaining(['session.created', 'run.completed', 'session.title', 'session.deleted']),
      ),
    );
    const mine = receiver.attempts.filter((a) => a.data.sessionId === id);
    expect(mine.every((a) => a.verified)).toBe(true);
    // One webhook-id per event; the receiver saw each id exactly as many times as the delivery says it was
    // attempted (one 200 ends it; a slow answer past the timeout may have been attempted again).
    const ids = [...new Set(mine.map((a) => a.id))];
    const types = ids.map((msg) => mine.find((a) => a.id === msg)!.type);
    // A prompt's title (generated after its first run) may come as a second session.title.
    expect(types.filter((x) => x !== 'session.title').sort()).toEqual(
      ['run.completed', 'session.created', 'session.deleted'].sort(),
    );
    const completed = mine.find((a) => a.type === 'run.completed')!;
    expect(completed.data).toMatchObject({
      tenantId: tenant.tenantId,
      sessionId: id,
      runId: run.body.runId,
      status: 'completed',
    });
    // No message text in run events.
    expect(JSON.stringify(mine.filter((a) => a.type.startsWith('run.')))).not.toContain('private words');

    const listed = await tenant.api.get('/v1/webhooks');
    expect(listed.body.data).toEqual([expect.objectContaining({ id: created.id, enabled: true })]);
    expect(JSON.stringify(listed.body)).not.toContain(created.secret);
    expect(JSON.stringify((await tenant.api.get(`/v1/webhooks/${created.id}`)).body)).not.toContain(
      created.secret,
    );
    // The receiver records an attempt before its answer reaches the sender, which only then marks the delivery
    // (a generated title's delivery may still be on its way): wait for every delivery to settle.
    const deliveries = await eventually(async () => {
      const listing = await tenant.api.get(`/v1/webhooks/${created.id}/deliveries`);
      expect(listing.status).toBe(200);
      expect(listing.body.data.length).toBeGreaterThanOrEqual(4);
      const seen = receiver.attempts.filter((a) => a.data.sessionId === id);
      for (const d of listing.body.data as Array<{ id: string; attempts: number; status: string }>) {
        expect({ id: d.id, status: d.status }).toEqual({ id: d.id, status: 'delivered' });
        expect(seen.filter((a) => a.id === `msg_${d.id}`)).toHaveLength(d.attempts);
      }
      return listing;
    });
    expect(deliveries.body.data[0]).toMatchObject({ status: 'delivered', lastStatusCode: 200 });
    expect(deliveries.body.data[0].attemptLog.at(-1)).toMatchObject({ statusCode: 200, error: null });
  });

  it('survives a receiver that fails, hangs and comes back; does not follow redirects', async () => {
    const tenant = await newTenant(t, 'flaky');
    const created = await hook(tenant.api, ['session.created']);
    receiver.mode = 'fail';
    const session = await tenant.api.post('/v1/sessions', { model: 'mock:echo' });
    const id = session.body.id;
    await eventually(() =>
      expect(receiver.attempts.filter((a) => a.data.sessionId === id).length).toBeGreaterThanOrEqual(2),
    );
    receiver.mode = 'redirect';
    await eventually(() =>
      expect(receiver.attempts.filter((a) => a.data.sessionId === id).length).toBeGreaterThanOrEqual(3),
    );
    receiver.mode = 'hang';
    await eventually(async () => {
      const [d] = (await tenant.api.get(`/v1/webhooks/${created.id}/deliveries`)).body.data;
      expect(d.attemptLog.some((a: { error: string | null }) => a.error?.includes('timed out'))).toBe(true);
    });
    receiver.mode = 'ok';
    await eventually(async () => {
      const [d] = (await tenant.api.get(`/v1/webhooks/${created.id}/deliveries`)).body.data;
      expect(d.status).toBe('delivered');
    });
    const [d] = (await tenant.api.get(`/v1/webhooks/${created.id}/deliveries`)).body.data;
    const codes = d.attemptLog.map((a: { statusCode: number | null }) => a.statusCode);
    expect(codes).toContain(500);
    expect(codes).toContain(302);
    expect(codes[codes.length - 1]).toBe(200);
    expect(d.attemptLog.find((a: { statusCode: number | null }) => a.statusCode === 302).error).toContain(
      'not followed',
    );
    // Every attempt carried the same webhook-id (the receiver's dedupe key) and a valid signature.
    const attempts = receiver.attempts.filter((a) => a.data.sessionId === id);
    expect(new Set(attempts.map((a) => a.id)).size).toBe(1);
    expect(attempts.every((a) => a.verified)).toBe(true);
    // The redirect target was never called.
    expect(attempts.length).toBe(d.attempts);
  });

  it('sends a delivery again on request', async () => {
    const tenant = await newTenant(t, 'resend');
    const created = await hook(tenant.api, ['session.created']);
    const id = (await tenant.api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    await eventually(() => expect(receiver.attempts.filter((a) => a.data.sessionId === id)).toHaveLength(1));
    const [d] = (await tenant.api.get(`/v1/webhooks/${created.id}/deliveries`)).body.data;
    const again = await tenant.api.post(`/v1/webhooks/${created.id}/deliveries/${d.id}/retry`);
    expect(again.status).toBe(202);
    await eventually(() => expect(receiver.attempts.filter((a) => a.data.sessionId === id)).toHaveLength(2));
    expect(
      (await tenant.api.get('/v1/audit?action=webhook.')).body.data.map((e: { action: string }) => e.action),
    ).toEqual(['webhook.delivery.retry', 'webhook.create']);
  });
});

describe('an endpoint failing for the whole retry window', () => {
  let short: TestApp;
  afterAll(async () => {
    await short?.close();
  });

  it('is disabled and says why; its delivery failed for good; enabling it again and a retry deliver it', async () => {
    short = await startTestApp({ env: { ...FAST, WEBHOOK_RETRY_WINDOW_MS: '1000' } });
    const tenant = await newTenant(short, 'failing');
    const created = await hook(tenant.api, ['session.created']);
    receiver.mode = 'fail';
    const id = (await tenant.api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    await eventually(async () => {
      const h = (await tenant.api.get(`/v1/webhooks/${created.id}`)).body;
      expect(h.enabled).toBe(false);
      expect(h.disabledReason).toContain('HTTP 500');
    });
    await eventually(async () => {
      const [d] = (await tenant.api.get(`/v1/webhooks/${created.id}/deliveries`)).body.data;
      expect(d.status).toBe('failed');
    });
    const audit = (await tenant.api.get('/v1/audit?action=webhook.disable')).body.data;
    expect(audit).toEqual([expect.objectContaining({ actor: { type: 'system' }, targetId: created.id })]);

    receiver.mode = 'ok';
    const enabled = await tenant.api.patch(`/v1/webhooks/${created.id}`, { enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
    const [d] = (await tenant.api.get(`/v1/webhooks/${created.id}/deliveries`)).body.data;
    expect((await tenant.api.post(`/v1/webhooks/${created.id}/deliveries/${d.id}/retry`)).status).toBe(202);
    await eventually(async () => {
      const [again] = (await tenant.api.get(`/v1/webhooks/${created.id}/deliveries?status=delivered`)).body
        .data;
      expect(again?.id).toBe(d.id);
    });
    expect(receiver.attempts.filter((a) => a.data.sessionId === id).pop()?.verified).toBe(true);
  });
});

describe('SSRF', () => {
  it('refuses URLs of loopback, private, link-local and metadata addresses unless allowed', async () => {
    const tenant = await newTenant(strict, 'ssrf');
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://localhost/hook',
      'http://10.1.2.3/hook',
      'http://192.168.0.10/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://[fd00:ec2::254]/hook',
      'http://0.0.0.0/hook',
    ]) {
      const res = await tenant.api.post('/v1/webhooks', { url, events: ['run.completed'] });
      expectError(res, 400, 'bad_request');
      expect({ url, field: res.body.error.details?.field }).toEqual({ url, field: 'url' });
    }
    const ok = await tenant.api.post('/v1/webhooks', {
      url: 'https://93.184.215.14/hook',
      events: ['run.completed'],
    });
    expect(ok.status).toBe(201);
    // Changing an endpoint's URL is checked the same way.
    expectError(
      await tenant.api.patch(`/v1/webhooks/${ok.body.id}`, { url: 'http://127.0.0.1/x' }),
      400,
      'bad_request',
    );
  });
});

describe('validation', () => {
  it('refuses unknown event types and non-http URLs', async () => {
    const tenant = await newTenant(t, 'validation');
    expectError(
      await tenant.api.post('/v1/webhooks', { url: receiver.url, events: ['run.exploded'] }),
      400,
      'bad_request',
    );
    expectError(
      await tenant.api.post('/v1/webhooks', { url: 'ftp://x/y', events: ['run.completed'] }),
      400,
      'bad_request',
    );
    expectError(
      await tenant.api.post('/v1/webhooks', { url: 'http://u:p@x/y', events: ['run.completed'] }),
      400,
      'bad_request',
    );
    const id = (await hook(tenant.api, ['run.failed'])).id;
    const other = await newTenant(t, 'validation other');
    expectError(await other.api.get(`/v1/webhooks/${id}`), 404, 'not_found');
    expectError(await other.api.delete(`/v1/webhooks/${id}`), 404, 'not_found');
    expect((await tenant.api.delete(`/v1/webhooks/${id}`)).status).toBe(204);
    expectError(await tenant.api.get(`/v1/webhooks/${id}`), 404, 'not_found');
  });
});
