// Webhooks in the distributed shape (1 api + 2 workers, real processes): the workers send the outbox. A worker
// killed (SIGKILL) while its delivery hangs at the receiver leaves the lease to expire, and another worker sends
// it again: the receiver gets that webhook-id at least once with a 200, maybe twice, never zero times.

import { Cluster, eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { WebhookReceiver } from './support/webhook-receiver';

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
      WEBHOOK_TIMEOUT_MS: '1500',
      WEBHOOK_RETRY_BASE_MS: '100',
      WEBHOOK_POLL_MS: '100',
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
    { timeoutMs: 30_000, intervalMs: 200 },
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
