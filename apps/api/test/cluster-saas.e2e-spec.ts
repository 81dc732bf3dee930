// Tenant administration and quotas in the distributed shape (2 api + 2 worker processes): a quota set through
// one api holds for prompts sent through both (usage is counted in Postgres, so every api sees the same), exactly
// when they race (each run is counted by the statement that records it), and a tenant disabled through one api is
// refused by the other too (within its key cache, 10 s).

import { Cluster, eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';

let cluster: Cluster;

beforeAll(async () => {
  cluster = await new Cluster({ apis: 2, workers: 2 }).start();
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

it('runs/day = 5: of 20 concurrent prompts on 20 sessions, sent through both apis, exactly 5 start', async () => {
  const admin = new Api(cluster.api(1), cluster.adminKey);
  const tenant = await newTenant({ url: cluster.api(1) } as never, 'cluster quota race');
  const via = [new Api(cluster.api(1), tenant.key), new Api(cluster.api(2), tenant.key)];
  const put = await admin.request('PUT', `/v1/admin/tenants/${tenant.tenantId}/quotas`, {
    quotas: [{ metric: 'runs', period: 'day', limit: 5 }],
  });
  expect(put.status).toBe(200);
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) {
    ids.push((await via[i % 2]!.post('/v1/sessions', { model: 'mock:echo' })).body.id as string);
  }
  const answers = await Promise.all(
    ids.map((id, i) => via[i % 2]!.post(`/v1/sessions/${id}/prompt`, { content: `go ${i}` })),
  );
  const counts: Record<number, number> = {};
  for (const res of answers) counts[res.status] = (counts[res.status] ?? 0) + 1;
  expect(counts).toEqual({ 202: 5, 429: 15 });
  for (const res of answers.filter((r) => r.status === 429)) {
    expect(res.body.error).toMatchObject({
      code: 'quota_exceeded',
      details: { scope: 'tenant', metric: 'runs', period: 'day', limit: 5, usage: 5 },
    });
  }
  // The workers run the 5 to their end; the stored runs are 5, as either api reads them.
  await eventually(
    async () => {
      for (const id of ids) expect((await via[0]!.get(`/v1/sessions/${id}`)).body.status).toBe('idle');
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
  expect((await via[1]!.get('/v1/usage')).body.data).toEqual([expect.objectContaining({ runs: 5 })]);
  expect((await via[0]!.get('/v1/quotas')).body.tenant).toEqual([
    expect.objectContaining({ metric: 'runs', limit: 5, usage: 5 }),
  ]);
});

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
