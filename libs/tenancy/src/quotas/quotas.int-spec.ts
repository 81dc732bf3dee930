// Run admission's quota check against the real database: a tenant without any quota is not queried again for a
// while (its runs start without the check's transaction), concurrent checks of a tenant share one query until it
// is known to have quotas, and setting a quota applies at once in this process.

import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@canopy/testing';
import { Database } from '@canopy/store';
import { QuotasRepository } from './quotas.repository';

let testDb: TestDatabase;
let db: Database;
let quotas: QuotasRepository;

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = new Database({ url: testDb.url, poolMax: 4, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 });
  quotas = new QuotasRepository(db);
});

afterAll(async () => {
  await db?.disconnect();
  await testDb?.drop();
});

async function newTenantWithSession(): Promise<string> {
  const id = randomUUID();
  await db.withTenant({ tenantId: id }, async (tx) => {
    await tx.tenant.create({ data: { id, name: `quota-test-${id.slice(0, 8)}` } });
    await tx.session.create({ data: { tenantId: id, id: 's', model: 'mock:echo' } });
  });
  return id;
}

async function sent(fn: () => Promise<unknown>): Promise<number> {
  const before = db.roundTripsSent;
  await fn();
  return db.roundTripsSent - before;
}

it('skips the query for a tenant without quotas, and applies a quota set in this process at once', async () => {
  const tenantId = await newTenantWithSession();
  expect(await sent(() => quotas.exceeded({ tenantId }, 's'))).toBeGreaterThan(0);
  // Found without any quota: the next checks send nothing.
  expect(await sent(() => quotas.exceeded({ tenantId }, 's'))).toBe(0);
  expect(await quotas.exceeded({ tenantId }, 's')).toBeNull();

  await quotas.set(tenantId, null, [{ metric: 'runs', period: 'day', limit: 0 }]);
  const over = await quotas.exceeded({ tenantId }, 's');
  expect(over).toMatchObject({ metric: 'runs', period: 'day', limit: 0 });
});

it('keeps checking a tenant whose only quotas are for other users', async () => {
  const tenantId = await newTenantWithSession();
  await quotas.set(tenantId, 'someone-else', [{ metric: 'runs', period: 'day', limit: 0 }]);
  expect(await quotas.exceeded({ tenantId }, 's')).toBeNull();
  // It has quotas (not this session's user's): the check still runs for its next runs.
  expect(await sent(() => quotas.exceeded({ tenantId }, 's'))).toBeGreaterThan(0);
});

it('sends one check for a burst of concurrent checks of a tenant without quotas', async () => {
  const tenantId = await newTenantWithSession();
  const one = await sent(() => quotas.exceeded({ tenantId }, 's'));
  const other = await newTenantWithSession();
  const burst = await sent(() =>
    Promise.all(Array.from({ length: 20 }, () => quotas.exceeded({ tenantId: other }, 's'))).then((all) =>
      expect(all).toEqual(Array(20).fill(null)),
    ),
  );
  expect(burst).toBe(one);
});

it('lets each concurrent check run its own once the first found quotas', async () => {
  const tenantId = await newTenantWithSession();
  await quotas.set(tenantId, null, [{ metric: 'runs', period: 'day', limit: 0 }]);
  const one = await sent(() => quotas.exceeded({ tenantId }, 's'));
  const all = await Promise.all(Array.from({ length: 3 }, () => quotas.exceeded({ tenantId }, 's')));
  expect(all).toEqual(Array(3).fill(expect.objectContaining({ metric: 'runs', limit: 0 })));
  expect(
    await sent(() => Promise.all([quotas.exceeded({ tenantId }, 's'), quotas.exceeded({ tenantId }, 's')])),
  ).toBe(2 * one);
});
