// Limits hold for the whole distributed deployment, whichever api a request reaches: the request rate per
// credential is counted in Redis, the runs in flight per tenant in Postgres.

import { Api, newTenant } from './support/api-client';
import { Cluster, eventually } from '@canopy/testing';

let cluster: Cluster;

beforeAll(async () => {
  cluster = await new Cluster({
    apis: 2,
    workers: 1,
    env: { RATE_LIMIT_PER_KEY: '30', MAX_CONCURRENT_RUNS_PER_TENANT: '1' },
  }).start();
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

it('counts the requests of one key on every api against one budget', async () => {
  const { key } = await newTenant({ url: cluster.api(1) } as never, 'rate');
  const [api1, api2] = [new Api(cluster.api(1), key), new Api(cluster.api(2), key)];
  for (let i = 0; i < 15; i++) {
    expect((await api1.get('/v1/sessions')).status).toBe(200);
    expect((await api2.get('/v1/sessions')).status).toBe(200);
  }
  for (const api of [api1, api2]) {
    const limited = await api.get('/v1/sessions');
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  }
});

it("refuses a tenant's second run in flight whichever api it comes through", async () => {
  const { key } = await newTenant({ url: cluster.api(1) } as never, 'runs');
  const [api1, api2] = [new Api(cluster.api(1), key), new Api(cluster.api(2), key)];
  const slow = (await api1.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 100 } })).body.id;
  const other = (await api1.post('/v1/sessions', { model: 'mock:echo' })).body.id;
  const { runId } = (await api1.post(`/v1/sessions/${slow}/prompt`, { content: 'a b c d e f g h i j' })).body;
  const refused = await api2.post(`/v1/sessions/${other}/prompt`, { content: 'me too' });
  expect(refused.status).toBe(429);
  expect(refused.body.error).toMatchObject({ code: 'rate_limited', details: { limit: 1 } });
  await eventually(async () => expect((await api2.get(`/v1/runs/${runId}`)).body.status).toBe('completed'), {
    timeoutMs: 15_000,
    intervalMs: 500, // within the key's 30 requests a minute
  });
  const after = await api2.post(`/v1/sessions/${other}/prompt`, { content: 'now', wait: true });
  expect(after.status).toBe(200);
  expect(after.body.finalResponse).toBe('Echo: now');
});
