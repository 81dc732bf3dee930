// Tenant administration and quotas in the distributed shape (2 api + 2 worker processes): a quota set through
// one api holds for prompts sent through both (usage is counted in Postgres, so every api sees the same), and a
// tenant disabled through one api is refused by the other too (within its key cache, 10 s).

import { Cluster, eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';

let cluster: Cluster;

beforeAll(async () => {
  cluster = await new Cluster({ apis: 2, workers: 2 }).start();
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

it('a runs-per-day quota holds across both apis; a disabled tenant is refused by both', async () => {
  const admin1 = new Api(cluster.api(1), cluster.adminKey);
  const tenant = await newTenant({ url: cluster.api(1) } as never, 'cluster quotas');
  const via = [new Api(cluster.api(1), tenant.key), new Api(cluster.api(2), tenant.key)];
  const put = await admin1.request('PUT', `/v1/admin/tenants/${tenant.tenantId}/quotas`, {
    quotas: [{ metric: 'runs', period: 'day', limit: 3 }],
  });
  expect(put.status).toBe(200);
  const session = (await via[0]!.post('/v1/sessions', { model: 'mock:echo' })).body.id as string;
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await via[i % 2]!.post(`/v1/sessions/${session}/prompt`, {
      content: `turn ${i}`,
      wait: true,
    });
    statuses.push(res.status);
    if (res.status === 429) expect(res.body.error.code).toBe('quota_exceeded');
  }
  expect(statuses).toEqual([200, 200, 200, 429, 429]);

  const disabled = await admin1.patch(`/v1/admin/tenants/${tenant.tenantId}`, { disabled: true });
  expect(disabled.body.disabled).toBe(true);
  expect((await via[0]!.get('/v1/sessions')).status).toBe(403);
  await eventually(
    async () => expect((await via[1]!.get('/v1/sessions')).body.error?.code).toBe('tenant_disabled'),
    {
      timeoutMs: 20_000,
      intervalMs: 500,
    },
  );
});
