// The SSRF guard where a distributed deployment executes runs: its workers (real processes over Postgres and
// Redis). The api here lets a tenant save a provider key on a loopback base URL (its operator allowed it), the worker
// does not: the run fails with target_refused and the provider is never called. Restarted with ALLOW_PRIVATE_TARGETS
// naming the address, the worker calls it.

import { Cluster, FakeLlmServer } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { TEST_ENCRYPTION_KEY } from './support/test-app';

let cluster: Cluster;
let fake: FakeLlmServer;
let workerAllows = false;

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  cluster = await new Cluster({
    apis: 1,
    workers: 1,
    env: { CANOPY_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY },
    processEnv: (name): Record<string, string> =>
      name.startsWith('api-') || workerAllows ? { ALLOW_PRIVATE_TARGETS: '127.0.0.1' } : {},
  }).start();
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
  await fake?.close();
}, 60_000);

it('refuses a tenant’s private provider base URL on the worker, and calls it once the operator allows it', async () => {
  const tenant = await newTenant({ url: cluster.api(1) } as never, 'cluster ssrf');
  const api = new Api(cluster.api(1), tenant.key);
  const put = await api.request('PUT', '/v1/providers/openai-compatible', {
    apiKey: 'sk-cluster-tenant-0123456789',
    baseUrl: fake.baseUrl,
    models: ['llama'],
  });
  expect(put.status).toBe(200);
  const session = (await api.post('/v1/sessions', { model: 'openai-compatible:llama' })).body.id;

  fake.enqueue({ text: ['from the worker'] });
  const failed = await api.post(`/v1/sessions/${session}/prompt`, { content: 'hi', wait: true });
  expect(failed.body.status).toBe('error');
  expect((await api.get(`/v1/runs/${failed.body.runId}`)).body).toMatchObject({
    status: 'error',
    error: {
      code: 'target_refused',
      message: 'model provider URL refused: 127.0.0.1 is a loopback, private, link-local or reserved address',
    },
  });
  expect(fake.requests).toEqual([]);

  workerAllows = true;
  await cluster.kill('worker-1');
  await cluster.startWorker(1);
  const ok = await api.post(`/v1/sessions/${session}/prompt`, { content: 'hi again', wait: true });
  expect({ status: ok.body.status, text: ok.body.finalResponse }).toEqual({
    status: 'completed',
    text: 'from the worker',
  });
  expect(fake.requests).toHaveLength(1);
}, 90_000);
