// Share links in the distributed shape (2 api + 1 worker processes over Postgres and Redis): a link made through
// one api is read through both; revoked through the other, it answers 404 on both at once (no api caches a link);
// the reads of a link are rate-limited per client address across the deployment (counted in Redis: each api alone
// saw fewer than the limit), and a rating given through one api is listed by the other.

import { Cluster } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';

const LIMIT = 8;

let cluster: Cluster;

beforeAll(async () => {
  cluster = await new Cluster({
    apis: 2,
    workers: 1,
    env: { RATE_LIMIT_SHARED_PER_ADDRESS: String(LIMIT) },
  }).start();
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

it('a link is read through both apis, revoked through either at once, and its reads counted across both', async () => {
  const tenant = await newTenant({ url: cluster.api(1) } as never, 'cluster sharing');
  const alice = new Api(
    cluster.api(1),
    (await tenant.api.post('/v1/tokens', { userId: 'alice' })).body.token,
  );
  const aliceOn2 = new Api(cluster.api(2), alice.credential);
  const created = await alice.post('/v1/sessions', { model: 'mock:echo', title: 'across the cluster' });
  const id: string = created.body.id;
  expect(
    (await alice.post(`/v1/sessions/${id}/prompt`, { content: 'hello cluster', wait: true })).status,
  ).toBe(200);
  const share = await alice.post(`/v1/sessions/${id}/shares`, {});
  expect(share.status).toBe(201);
  const read = (api: 1 | 2) => fetch(`${cluster.api(api)}/v1/shared/${share.body.token}`);

  // Through both apis (4 reads of the address's budget).
  for (const api of [1, 2] as const) {
    const res = await read(api);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { title: string }).title).toBe('across the cluster');
  }
  // A rating given through one api is the other's to list.
  expect((await alice.request('PUT', `/v1/sessions/${id}/nodes/2/feedback`, { rating: 'up' })).status).toBe(
    200,
  );
  const listed = await aliceOn2.get('/v1/feedback');
  expect(listed.body.data).toEqual([expect.objectContaining({ nodeId: 2, userId: 'alice', rating: 'up' })]);

  // Revoked through api 2: both answer 404 at once.
  const other = await alice.post(`/v1/sessions/${id}/shares`, {});
  expect((await fetch(`${cluster.api(1)}/v1/shared/${other.body.token}`)).status).toBe(200);
  expect((await aliceOn2.delete(`/v1/shares/${other.body.id}`)).status).toBe(204);
  expect((await fetch(`${cluster.api(1)}/v1/shared/${other.body.token}`)).status).toBe(404);
  expect((await fetch(`${cluster.api(2)}/v1/shared/${other.body.token}`)).status).toBe(404);

  // 5 reads so far (2, 1, then 1 and 1): LIMIT - 5 more pass, alternating apis, then the next is refused on either.
  const statuses: number[] = [];
  for (let i = 0; i < LIMIT - 5 + 1; i++) statuses.push((await read(i % 2 === 0 ? 1 : 2)).status);
  expect(statuses).toEqual([...Array<number>(LIMIT - 5).fill(200), 429]);
  expect((await read(1)).status).toBe(429);
});
