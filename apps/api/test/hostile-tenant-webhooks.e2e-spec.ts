// A hostile (or broken) tenant's webhook endpoints against the real app, on both runtimes (embedded PGlite, and
// Postgres): an endpoint that accepts requests and never answers holds only its own slots. Another tenant's
// deliveries arrive while its attempts still hang, it never has more attempts in flight than
// WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT (its backlog waits its turn), and once disabled its deliveries settle as not
// sent, saying why, instead of staying pending. A tenant with more hanging endpoints than the sender has slots
// holds at most WEBHOOK_MAX_IN_FLIGHT_PER_TENANT of them, and another tenant's deliveries still arrive. The
// timeout is long: the hanging attempts stay open throughout. The distributed shape (two sender processes
// sharing the limit) is in cluster-webhooks.e2e-spec.ts.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';
import { WebhookReceiver } from './support/webhook-receiver';

const LIMIT = 2;
const TENANT_LIMIT = 4;
/** The sender's slots: fewer than a tenant's 8 hanging endpoints could fill by their own limit. */
const SLOTS = 8;
const ENV = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  // Longer than the test: a hanging attempt stays open until the receiver answers it.
  WEBHOOK_TIMEOUT_MS: '120000',
  WEBHOOK_RETRY_BASE_MS: '100',
  WEBHOOK_POLL_MS: '50',
  WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: String(LIMIT),
  WEBHOOK_MAX_IN_FLIGHT_PER_TENANT: String(TENANT_LIMIT),
  WEBHOOK_MAX_IN_FLIGHT: String(SLOTS),
};
/** Long enough for a loaded machine, far shorter than the attempts' timeout. */
const WAIT = { timeoutMs: 20_000, intervalMs: 50 };

interface Delivery {
  id: string;
  status: string;
  attempts: number;
  attemptLog: unknown[];
  lastError: string | null;
}

async function hook(api: Api, receiver: WebhookReceiver): Promise<string> {
  const res = await api.post('/v1/webhooks', { url: receiver.url, events: ['session.created'] });
  expect(res.status).toBe(201);
  receiver.secret = res.body.secret;
  return (res.body as { id: string }).id;
}

async function sessions(api: Api, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await api.post('/v1/sessions', { model: 'mock:echo' });
    expect(res.status).toBe(201);
    ids.push((res.body as { id: string }).id);
  }
  return ids;
}

async function deliveries(api: Api, webhookId: string): Promise<Delivery[]> {
  const res = await api.get(`/v1/webhooks/${webhookId}/deliveries?limit=100`);
  expect(res.status).toBe(200);
  return (res.body as { data: Delivery[] }).data;
}

describe.each([['embedded'], ['postgres']])('on the %s runtime', (runtime) => {
  let t: TestApp;
  let dataDir: string | null = null;
  const receivers: WebhookReceiver[] = [];

  async function receiver(): Promise<WebhookReceiver> {
    const r = await WebhookReceiver.start();
    receivers.push(r);
    return r;
  }

  beforeAll(async () => {
    if (runtime === 'embedded') dataDir = mkdtempSync(join(tmpdir(), 'canopy-hostile-webhooks-'));
    t = await startTestApp({ env: ENV, ...(dataDir ? { embeddedDataDir: dataDir } : {}) });
  });

  afterAll(async () => {
    // The receivers first: their hung requests end, so the app's attempts end before it stops.
    await Promise.all(receivers.map((r) => r.close()));
    await t?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("a hanging endpoint delays only itself: another tenant's deliveries arrive while its attempts hang", async () => {
    const hanging = await receiver();
    hanging.mode = 'hang';
    const x = await newTenant(t, 'hanging endpoint');
    const xHook = await hook(x.api, hanging);
    await sessions(x.api, 10);
    // X's attempts are open at its receiver, unanswered.
    await eventually(() => expect(hanging.open).toBeGreaterThanOrEqual(1), WAIT);

    const ok = await receiver();
    const y = await newTenant(t, 'neighbour');
    const yHook = await hook(y.api, ok);
    const openWhenYArrived: number[] = [];
    ok.onAttempt = () => openWhenYArrived.push(hanging.open);
    const yIds = await sessions(y.api, 3);
    await eventually(async () => {
      expect((await deliveries(y.api, yHook)).map((d) => d.status)).toEqual([
        'delivered',
        'delivered',
        'delivered',
      ]);
    }, WAIT);
    expect(ok.attempts.map((a) => a.data.sessionId).sort()).toEqual([...yIds].sort());
    expect(ok.attempts.every((a) => a.verified)).toBe(true);

    // Every one of Y's deliveries arrived while X's attempts were open, none of which was answered or given up.
    expect(openWhenYArrived).toHaveLength(3);
    expect(openWhenYArrived.every((open) => open >= 1)).toBe(true);
    expect(hanging.attempts).toHaveLength(hanging.open);
    // X has as many attempts in flight as its limit lets it, never more: the rest wait their turn, not attempted.
    await eventually(() => expect(hanging.open).toBe(LIMIT), WAIT);
    expect(hanging.attempts).toHaveLength(LIMIT);
    expect(hanging.maxOpen).toBe(LIMIT);
    const xs = await deliveries(x.api, xHook);
    expect(xs.map((d) => d.status)).toEqual(Array(10).fill('pending'));
    expect(xs.filter((d) => d.attempts > 0)).toHaveLength(LIMIT);
  });

  it("a disabled endpoint's deliveries settle as not sent, saying why; its attempts in flight are not retried", async () => {
    const hanging = await receiver();
    hanging.mode = 'hang';
    const z = await newTenant(t, 'disabled endpoint');
    const zHook = await hook(z.api, hanging);
    await sessions(z.api, 5);
    await eventually(() => expect(hanging.open).toBeGreaterThanOrEqual(1), WAIT);

    const patched = await z.api.patch(`/v1/webhooks/${zHook}`, { enabled: false });
    expect(patched.status).toBe(200);
    // The deliveries waiting their turn: failed at once, no attempt made, saying why. Those in flight are left to
    // their attempts (one leased as the PATCH came may reach the receiver only now).
    const settled = await deliveries(z.api, zHook);
    const inFlight = settled.filter((d) => d.attempts === 1);
    const waiting = settled.filter((d) => d.attempts === 0);
    expect(inFlight.length).toBeGreaterThanOrEqual(1);
    expect(inFlight.length).toBeLessThanOrEqual(LIMIT);
    expect(inFlight.every((d) => d.status === 'pending')).toBe(true);
    expect(waiting).toHaveLength(5 - inFlight.length);
    for (const d of waiting)
      expect(d).toMatchObject({
        status: 'failed',
        attemptLog: [],
        lastError: 'not sent: the endpoint was disabled by its owner',
      });

    // The attempts in flight fail after the disabling: not retried.
    await eventually(() => expect(hanging.open).toBe(inFlight.length), WAIT);
    hanging.answerHung(500);
    await eventually(async () => {
      const all = await deliveries(z.api, zHook);
      expect(all.filter((d) => d.status !== 'failed')).toEqual([]);
      expect(all.filter((d) => d.attempts === 1).map((d) => d.lastError)).toEqual(
        Array(inFlight.length).fill('HTTP 500; not retried: the endpoint was disabled by its owner'),
      );
    }, WAIT);
    expect(hanging.attempts).toHaveLength(inFlight.length);

    // Enabled again, what was settled stays settled; the retry route sends a delivery again.
    hanging.mode = 'ok';
    expect((await z.api.patch(`/v1/webhooks/${zHook}`, { enabled: true })).status).toBe(200);
    const again = waiting[0]!.id;
    expect((await z.api.post(`/v1/webhooks/${zHook}/deliveries/${again}/retry`)).status).toBe(202);
    await eventually(async () => {
      const all = await deliveries(z.api, zHook);
      expect(all.find((d) => d.id === again)).toMatchObject({ status: 'delivered', attempts: 1 });
    }, WAIT);
    expect((await deliveries(z.api, zHook)).filter((d) => d.status === 'delivered')).toHaveLength(1);
  });

  it("a tenant's many hanging endpoints hold at most its bound: another tenant's deliveries arrive meanwhile", async () => {
    const hanging = await receiver();
    hanging.mode = 'hang';
    const w = await newTenant(t, 'many hanging endpoints');
    // 8 endpoints with 2 deliveries each: 16 attempts by the endpoint limit, more than the sender's slots.
    const wHooks: string[] = [];
    for (let i = 0; i < 8; i++) wHooks.push(await hook(w.api, hanging));
    await sessions(w.api, 2);
    await eventually(() => expect(hanging.open).toBeGreaterThanOrEqual(1), WAIT);

    const ok = await receiver();
    const y = await newTenant(t, 'neighbour of many');
    const yHook = await hook(y.api, ok);
    const openWhenYArrived: number[] = [];
    ok.onAttempt = () => openWhenYArrived.push(hanging.open);
    await sessions(y.api, 3);
    await eventually(async () => {
      expect((await deliveries(y.api, yHook)).map((d) => d.status)).toEqual([
        'delivered',
        'delivered',
        'delivered',
      ]);
    }, WAIT);
    expect(openWhenYArrived).toHaveLength(3);
    expect(openWhenYArrived.every((open) => open >= 1)).toBe(true);

    // W has as many attempts in flight as its bound lets it over all its endpoints, never more, none answered.
    await eventually(() => expect(hanging.open).toBe(TENANT_LIMIT), WAIT);
    expect(hanging.maxOpen).toBe(TENANT_LIMIT);
    expect(hanging.attempts).toHaveLength(TENANT_LIMIT);
    const ws = (await Promise.all(wHooks.map((id) => deliveries(w.api, id)))).flat();
    expect(ws).toHaveLength(16);
    expect(ws.every((d) => d.status === 'pending')).toBe(true);
    expect(ws.filter((d) => d.attempts > 0)).toHaveLength(TENANT_LIMIT);
  });
});
