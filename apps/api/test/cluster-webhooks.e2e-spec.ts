// Webhooks in the distributed shape (1 api + 2 workers, real processes): the workers send the outbox. A worker
// killed (SIGKILL) while its delivery hangs at the receiver leaves the lease to expire, and another worker sends
// it again: the receiver gets that webhook-id at least once with a 200, maybe twice, never zero times. A tenant's
// hanging endpoint holds at most WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT attempts across both workers, and another
// tenant's deliveries arrive while they hang.

import { Cluster, eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { WebhookReceiver } from './support/webhook-receiver';

const PER_ENDPOINT = 2;

interface Delivery {
  status: string;
}

let cluster: Cluster;
let api: Api;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  cluster = await new Cluster({
    apis: 1,
    workers: 2,
    env: {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // Long enough for a hanging endpoint's attempts to stay open while another tenant's deliveries go out.
      WEBHOOK_TIMEOUT_MS: '5000',
      WEBHOOK_RETRY_BASE_MS: '100',
      WEBHOOK_POLL_MS: '100',
      WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: String(PER_ENDPOINT),
    },
  }).start();
  api = new Api(cluster.api(1), (await newTenant({ url: cluster.api(1) } as never, 'cluster hooks')).key);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
  await receiver?.close();
}, 60_000);

it('delivers a webhook whose worker was killed mid-delivery (at least once, by the same webhook-id)', async () => {
  const created = await api.post('/v1/webhooks', { url: receiver.url, events: ['run.completed'] });
  expect(created.status).toBe(201);
  receiver.secret = created.body.secret;
  receiver.mode = 'hang';
  const session = (await api.post('/v1/sessions', { model: 'mock:echo' })).body;
  const run = await api.post(`/v1/sessions/${session.id}/prompt`, { content: 'hello', wait: true });
  expect(run.status).toBe(200);

  // A worker holds the delivery: the receiver has it and does not answer.
  await eventually(() => expect(receiver.ofType('run.completed')).toHaveLength(1), { timeoutMs: 20_000 });
  const messageId = receiver.ofType('run.completed')[0]!.id;
  await Promise.all([cluster.kill('worker-1'), cluster.kill('worker-2')]);
  receiver.mode = 'ok';
  await Promise.all([cluster.startWorker(1), cluster.startWorker(2)]);

  await eventually(
    async () => {
      const [d] = (await api.get(`/v1/webhooks/${created.body.id}/deliveries`)).body.data;
      expect(d).toMatchObject({ status: 'delivered', lastStatusCode: 200 });
    },
    // The killed attempt's lease (twice the timeout and a second) expires first.
    { timeoutMs: 45_000, intervalMs: 200 },
  );
  const attempts = receiver.ofType('run.completed');
  expect(attempts.length).toBeGreaterThanOrEqual(2);
  expect(attempts.every((a) => a.id === messageId && a.verified)).toBe(true);
  expect(attempts[0]!.data).toMatchObject({ runId: run.body.runId, status: 'completed' });
  const [d] = (await api.get(`/v1/webhooks/${created.body.id}/deliveries`)).body.data;
  // The killed attempt counted (leased) but left no result; the one after it answered 200.
  expect(d.attempts).toBeGreaterThanOrEqual(2);
  expect(d.attemptLog[d.attemptLog.length - 1]).toMatchObject({ statusCode: 200 });
});

it("a hanging endpoint holds at most its limit across both workers; another tenant's deliveries arrive meanwhile", async () => {
  const hanging = await WebhookReceiver.start();
  const ok = await WebhookReceiver.start();
  try {
    hanging.mode = 'hang';
    const x = new Api(
      cluster.api(1),
      (await newTenant({ url: cluster.api(1) } as never, 'hanging hooks')).key,
    );
    const xHook = await x.post('/v1/webhooks', { url: hanging.url, events: ['session.created'] });
    hanging.secret = xHook.body.secret;
    // A backlog larger than both workers' leases together.
    for (let i = 0; i < 30; i++)
      expect((await x.post('/v1/sessions', { model: 'mock:echo' })).status).toBe(201);
    await eventually(() => expect(hanging.open).toBeGreaterThanOrEqual(1), { timeoutMs: 20_000 });

    const y = new Api(
      cluster.api(1),
      (await newTenant({ url: cluster.api(1) } as never, 'neighbour hooks')).key,
    );
    const yHook = await y.post('/v1/webhooks', { url: ok.url, events: ['session.created'] });
    ok.secret = yHook.body.secret;
    const openWhenYArrived: number[] = [];
    ok.onAttempt = () => openWhenYArrived.push(hanging.open);
    for (let i = 0; i < 3; i++)
      expect((await y.post('/v1/sessions', { model: 'mock:echo' })).status).toBe(201);
    await eventually(
      async () => {
        const listed = (await y.get(`/v1/webhooks/${yHook.body.id}/deliveries`)).body.data as Delivery[];
        expect(listed.map((d) => d.status)).toEqual(['delivered', 'delivered', 'delivered']);
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    // Y's deliveries went out while X's attempts hung, and X never had more in flight than its limit, though
    // two workers were leasing.
    expect(openWhenYArrived).toHaveLength(3);
    expect(openWhenYArrived.every((open) => open >= 1)).toBe(true);
    expect(hanging.maxOpen).toBeLessThanOrEqual(PER_ENDPOINT);

    // X's endpoint comes back: its backlog drains, still never more than its limit at once.
    hanging.mode = 'ok';
    hanging.answerHung(200);
    await eventually(
      async () => {
        const listed = (await x.get(`/v1/webhooks/${xHook.body.id}/deliveries?limit=100`)).body
          .data as Delivery[];
        expect(listed.filter((d) => d.status === 'delivered')).toHaveLength(30);
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(hanging.maxOpen).toBe(PER_ENDPOINT);
    expect(new Set(hanging.attempts.filter((a) => a.verified).map((a) => a.id)).size).toBe(30);
  } finally {
    await hanging.close();
    await ok.close();
  }
}, 120_000);
