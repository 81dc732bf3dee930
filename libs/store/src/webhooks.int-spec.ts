// A failed webhook attempt against the real database: the delivery's retry window and the endpoint's failure
// streak are judged at the one moment the dispatcher passes (`at`), never at a later clock reading inside the
// transaction. Read twice, a failure crossing the window's end between the two readings left the endpoint disabled
// with the delivery still pending (a disabled endpoint's pending deliveries wait for it to be enabled again).

import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@canopy/testing';
import { Database } from './database';
import { WebhooksRepository, type AttemptRecord, type ClaimedDelivery } from './webhooks.repository';

const WINDOW_MS = 60 * 60_000;

let testDb: TestDatabase;
let db: Database;
let repo: WebhooksRepository;

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = new Database({ url: testDb.url, poolMax: 4, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 });
  repo = new WebhooksRepository(db);
});

afterAll(async () => {
  await db?.disconnect();
  await testDb?.drop();
});

/** A tenant with an enabled endpoint and one delivery created `ageMs` ago, claimed as a sender would. */
async function claimedOldDelivery(ageMs: number): Promise<{ tenantId: string; delivery: ClaimedDelivery }> {
  const tenantId = randomUUID();
  await db.withTenant({ tenantId }, (tx) =>
    tx.tenant.create({ data: { id: tenantId, name: `webhook-test-${tenantId.slice(0, 8)}` } }),
  );
  const hook = await repo.create(
    { tenantId },
    {
      url: 'http://127.0.0.1:9/hook',
      events: ['run.completed'],
      enabled: true,
      description: null,
      secret: 'whsec_x',
    },
  );
  await db.withTenantSql({ tenantId }, (tx) =>
    tx.query(
      `INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_type, payload, created_at, next_attempt_at)
       VALUES ($1::uuid, $2::uuid, 'run.completed', '{}'::jsonb, now() - make_interval(secs => $3::float8 / 1000),
               now() - interval '1 second')`,
      [tenantId, hook.id, ageMs],
    ),
  );
  return { tenantId, delivery: await claim(tenantId) };
}

async function claim(tenantId: string): Promise<ClaimedDelivery> {
  const claimed = (await repo.claimDue(100, 60_000)).filter((d) => d.tenantId === tenantId);
  expect(claimed).toHaveLength(1);
  return claimed[0]!;
}

function failedAttempt(d: ClaimedDelivery): AttemptRecord {
  return { attempt: d.attempts, at: new Date().toISOString(), statusCode: 500, latencyMs: 3, error: null };
}

it('keeps the endpoint enabled for a failure judged inside the window, though the clock has passed it since', async () => {
  // Created a window and a minute ago: by the wall clock the streak (which starts at the delivery) is over.
  const { tenantId, delivery } = await claimedOldDelivery(WINDOW_MS + 60_000);
  const windowEnd = delivery.createdAt.getTime() + WINDOW_MS;

  // Judged a millisecond before the window's end: retried, and the endpoint stays enabled.
  const retried = await repo.recordAttempt(delivery, failedAttempt(delivery), {
    delivered: false,
    retryAt: new Date(Date.now() - 1_000), // due again at once, for the second attempt below
    disableAfterMs: WINDOW_MS,
    at: windowEnd - 1,
  });
  expect(retried).toEqual({ disabled: false });
  const hookId = delivery.webhookId;
  expect(await repo.get({ tenantId }, hookId)).toMatchObject({ enabled: true, disabledReason: null });
  const [pending] = await repo.deliveries({ tenantId }, hookId, { limit: 10 });
  expect(pending).toMatchObject({ status: 'pending', lastStatusCode: 500 });

  // Judged at the window's end: the delivery fails for good and the endpoint is disabled, together.
  const again = await claim(tenantId);
  const failed = await repo.recordAttempt(again, failedAttempt(again), {
    delivered: false,
    retryAt: null,
    disableAfterMs: WINDOW_MS,
    at: windowEnd,
  });
  expect(failed).toEqual({ disabled: true });
  const hook = await repo.get({ tenantId }, hookId);
  expect(hook.enabled).toBe(false);
  expect(hook.disabledReason).toMatch(/^disabled after failing since .* \(last: HTTP 500\)$/);
  const [done] = await repo.deliveries({ tenantId }, hookId, { limit: 10 });
  expect(done).toMatchObject({ status: 'failed', attempts: 2 });
  expect(done!.attemptLog).toHaveLength(2);
});
