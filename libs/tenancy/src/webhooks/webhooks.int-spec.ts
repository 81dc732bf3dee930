// The webhook outbox's repository against the real database.
// - A failed attempt: the delivery's retry window and the endpoint's failure streak are judged at the one moment
//   the dispatcher passes (`at`), never at a later clock reading inside the transaction.
// - The lease: at most `perEndpoint` live leases per endpoint and `perTenant` per tenant (over all its endpoints),
//   also when several senders lease at the same moment; taken in turns across endpoints and tenants, so one
//   endpoint's backlog never fills a lease ahead of others, and a tenant at its bound takes no place in a lease.
// - Attempts whose leases the counts no longer see: a deleted endpoint's in flight count against its tenant in
//   the sender holding them (`held`); a retry of a delivery in flight keeps its lease instead of dropping it.
// - A disabled endpoint's deliveries: settled as not sent (failed, lastError saying why, no attempt made), whether
//   it was disabled for failing, by its owner, or its event raced the disabling; an attempt in flight when it was
//   disabled is not retried.

import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@canopy/testing';
import { Database } from '@canopy/store';
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

// Leases take due rows of every tenant: each test starts with an empty outbox.
afterEach(async () => {
  await db.withAdminSql('test: empty the outbox', (tx) => tx.query('DELETE FROM webhook_deliveries'));
});

async function newTenant(): Promise<string> {
  const tenantId = randomUUID();
  await db.withTenant({ tenantId }, (tx) =>
    tx.tenant.create({ data: { id: tenantId, name: `webhook-test-${tenantId.slice(0, 8)}` } }),
  );
  return tenantId;
}

async function newEndpoint(tenantId: string): Promise<string> {
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
  return hook.id;
}

/** `n` due deliveries of an endpoint, the first due `dueSecondsAgo` ago and each next one a second later. */
async function queue(tenantId: string, webhookId: string, n: number, dueSecondsAgo = 100): Promise<void> {
  await db.withTenantSql({ tenantId }, (tx) =>
    tx.query(
      `INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_type, payload, next_attempt_at)
       SELECT $1::uuid, $2::uuid, 'run.completed', jsonb_build_object('i', i),
              now() - make_interval(secs => $4::float8 - i)
         FROM generate_series(0, $3::int - 1) AS i`,
      [tenantId, webhookId, n, dueSecondsAgo],
    ),
  );
}

function countBy<T>(items: T[], key: (x: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of items) out[key(x)] = (out[key(x)] ?? 0) + 1;
  return out;
}

function delivered(d: ClaimedDelivery): Promise<unknown> {
  const attempt = {
    attempt: d.attempts,
    at: new Date().toISOString(),
    statusCode: 200,
    latencyMs: 1,
    error: null,
  };
  return repo.recordAttempt(d, attempt, { delivered: true });
}

/** A tenant with an enabled endpoint and one delivery created `ageMs` ago, claimed as a sender would. */
async function claimedOldDelivery(ageMs: number): Promise<{ tenantId: string; delivery: ClaimedDelivery }> {
  const tenantId = await newTenant();
  const hook = { id: await newEndpoint(tenantId) };
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
  const claimed = (await repo.claimDue(100, 60_000, { perEndpoint: 10, perTenant: 100 })).filter(
    (d) => d.tenantId === tenantId,
  );
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

describe('the lease', () => {
  it('keeps at most perEndpoint attempts of an endpoint in flight, and frees a slot as one settles', async () => {
    const tenantId = await newTenant();
    const hook = await newEndpoint(tenantId);
    await queue(tenantId, hook, 10);

    const first = await repo.claimDue(20, 60_000, { perEndpoint: 3, perTenant: 100 });
    expect(first).toHaveLength(3);
    // The oldest due first.
    expect(first.map((d) => d.payload.i)).toEqual([0, 1, 2]);
    // At its limit: nothing more of it, however much is due.
    expect(await repo.claimDue(20, 60_000, { perEndpoint: 3, perTenant: 100 })).toEqual([]);

    await delivered(first[0]!);
    const next = await repo.claimDue(20, 60_000, { perEndpoint: 3, perTenant: 100 });
    expect(next.map((d) => d.payload.i)).toEqual([3]);
    // An expired lease (its sender died) no longer holds a slot: the row is due again, with the rest.
    await db.withAdminSql('test: expire the leases', (tx) =>
      tx.query(
        `UPDATE webhook_deliveries SET locked_until = now() - interval '1 second' WHERE id = $1::uuid`,
        [first[1]!.id],
      ),
    );
    expect(
      (await repo.claimDue(20, 60_000, { perEndpoint: 3, perTenant: 100 })).map((d) => d.payload.i),
    ).toEqual([1]);
  });

  it('takes turns across endpoints: a backlog of one never fills a lease ahead of the others', async () => {
    const tenantId = await newTenant();
    const [busy, quiet, third] = [
      await newEndpoint(tenantId),
      await newEndpoint(tenantId),
      await newEndpoint(tenantId),
    ];
    // The backlog is due earliest; the others' rows came later.
    await queue(tenantId, busy, 30, 300);
    await queue(tenantId, quiet, 2, 10);
    await queue(tenantId, third, 1, 5);

    const leased = await repo.claimDue(5, 60_000, { perEndpoint: 10, perTenant: 100 });
    expect(countBy(leased, (d) => d.webhookId)).toEqual({ [busy]: 2, [quiet]: 2, [third]: 1 });
    // Each endpoint's own rows in due order.
    expect(leased.filter((d) => d.webhookId === busy).map((d) => d.payload.i)).toEqual([0, 1]);
  });

  it('takes turns across tenants: one with many endpoints does not fill a lease ahead of another', async () => {
    const [many, one] = [await newTenant(), await newTenant()];
    for (let i = 0; i < 6; i++) await queue(many, await newEndpoint(many), 3, 300 - i);
    const single = await newEndpoint(one);
    await queue(one, single, 3, 10);

    const leased = await repo.claimDue(4, 60_000, { perEndpoint: 10, perTenant: 100 });
    // The single endpoint's tenant has a turn of its own, before the other's second endpoint.
    expect(countBy(leased, (d) => d.tenantId)).toEqual({ [many]: 3, [one]: 1 });
    const wider = await repo.claimDue(6, 60_000, { perEndpoint: 10, perTenant: 100 });
    expect(countBy(wider, (d) => d.tenantId)[one]).toBeGreaterThanOrEqual(1);
  });

  it('holds the limit across senders leasing at the same moment', async () => {
    const tenantId = await newTenant();
    const hook = await newEndpoint(tenantId);
    const senders = [1, 2, 3].map(
      () => new Database({ url: testDb.url, poolMax: 1, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 }),
    );
    try {
      const repos = senders.map((s) => new WebhooksRepository(s));
      for (let round = 0; round < 10; round++) {
        await queue(tenantId, hook, 12);
        const leased = (
          await Promise.all(repos.map((r) => r.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 100 })))
        ).flat();
        expect({ round, leased: leased.length }).toEqual({ round, leased: 2 });
        await db.withAdminSql('test: empty the outbox', (tx) => tx.query('DELETE FROM webhook_deliveries'));
      }
    } finally {
      await Promise.all(senders.map((s) => s.disconnect()));
    }
  });
});

describe("the lease's bound per tenant", () => {
  it("keeps a tenant's attempts over all its endpoints within perTenant, and leases another tenant's meanwhile", async () => {
    const [many, other] = [await newTenant(), await newTenant()];
    // Six endpoints, each due before the other tenant's: more than the tenant's bound over their endpoint limits.
    const hooks: string[] = [];
    for (let i = 0; i < 6; i++) {
      hooks.push(await newEndpoint(many));
      await queue(many, hooks[i]!, 3, 300 - i);
    }
    const single = await newEndpoint(other);
    await queue(other, single, 3, 10);

    const first = await repo.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 4 });
    expect(countBy(first, (d) => d.tenantId)).toEqual({ [many]: 4, [other]: 2 });
    // Turns across its endpoints: four endpoints with one row each, not two with two.
    expect(
      Object.keys(
        countBy(
          first.filter((d) => d.tenantId === many),
          (d) => d.webhookId,
        ),
      ),
    ).toHaveLength(4);

    // At its bound: nothing more of it, however much is due; another tenant's delivery, due later, is leased
    // ahead of its backlog even by a lease of one (a tenant at its bound takes no place in a lease).
    await queue(other, await newEndpoint(other), 1, 1);
    const next = await repo.claimDue(1, 60_000, { perEndpoint: 2, perTenant: 4 });
    expect(next.map((d) => d.tenantId)).toEqual([other]);
    expect(await repo.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 4 })).toEqual([]);

    // One of its attempts ends: a slot of its own again, on an endpoint below its own limit.
    await delivered(first.find((d) => d.tenantId === many)!);
    const refill = await repo.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 4 });
    expect(refill.map((d) => d.tenantId)).toEqual([many]);
    // An expired lease (its sender died) no longer counts against the tenant either.
    const held = first.filter((d) => d.tenantId === many).slice(1);
    await db.withAdminSql('test: expire the leases', (tx) =>
      tx.query(
        `UPDATE webhook_deliveries SET locked_until = now() - interval '1 second' WHERE id = ANY($1::uuid[])`,
        [held.map((d) => d.id)],
      ),
    );
    expect(
      countBy(await repo.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 4 }), (d) => d.tenantId),
    ).toEqual({ [many]: 3 });
  });

  it('holds the tenant bound across senders leasing at the same moment, while its attempts end', async () => {
    const tenantId = await newTenant();
    for (let i = 0; i < 8; i++) await queue(tenantId, await newEndpoint(tenantId), 100);
    const inFlight = async () => {
      const [row] = await db.withAdminSql('test: count the live leases', (tx) =>
        tx.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = $1::uuid AND locked_until >= now()`,
          [tenantId],
        ),
      );
      return row!.n;
    };
    const senders = [1, 2, 3].map(
      () => new Database({ url: testDb.url, poolMax: 1, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 }),
    );
    try {
      const repos = senders.map((s) => new WebhooksRepository(s));
      const live: ClaimedDelivery[] = [];
      for (let round = 0; round < 100; round++) {
        // One or two of its attempts end while the senders lease: a sender's count of its leases can go stale
        // between its statements, and another's lease must not take the slots it is about to fill.
        const ending = live.splice(0, 1 + (round % 2));
        const results = await Promise.all([
          ...ending.map(delivered),
          ...repos.map((r) => r.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 3 })),
        ]);
        for (const leased of results.slice(ending.length)) live.push(...(leased as ClaimedDelivery[]));
        expect({ round, inFlight: await inFlight() }).toEqual({ round, inFlight: live.length });
        expect({ round, withinTheBound: live.length <= 3 }).toEqual({ round, withinTheBound: true });
      }
      // No attempt ending now: one lease fills the bound, no more.
      await repos[0]!.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 3 });
      expect(await inFlight()).toBe(3);
    } finally {
      await Promise.all(senders.map((s) => s.disconnect()));
    }
  });
});

describe('attempts the counts of live leases no longer see', () => {
  it("a deleted endpoint's attempts in flight count against its tenant in the sender holding them", async () => {
    const tenantId = await newTenant();
    const gone = await newEndpoint(tenantId);
    await queue(tenantId, gone, 2);
    const inFlight = await repo.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 2 });
    expect(inFlight).toHaveLength(2);
    // Deleted with its attempts in flight: its deliveries, and their leases, go with it.
    await repo.delete({ tenantId }, gone);
    const next = await newEndpoint(tenantId);
    await queue(tenantId, next, 2);

    const held = new Map([[tenantId, 2]]);
    expect(await repo.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 2, held })).toEqual([]);
    // One of them ended: one slot.
    held.set(tenantId, 1);
    expect(await repo.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 2, held })).toHaveLength(1);
  });

  it('a retry of a delivery with an attempt in flight keeps its lease: no second attempt starts beside it', async () => {
    const tenantId = await newTenant();
    const hook = await newEndpoint(tenantId);
    await queue(tenantId, hook, 1);
    const [d] = await repo.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 2 });
    await repo.retry({ tenantId }, hook, d!.id);
    await repo.retry({ tenantId }, hook, d!.id);
    expect(await repo.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 2 })).toEqual([]);

    // Its attempt settles it; a retry after that sends it again.
    await delivered(d!);
    expect((await repo.deliveries({ tenantId }, hook, { limit: 10 }))[0]).toMatchObject({
      status: 'delivered',
    });
    await repo.retry({ tenantId }, hook, d!.id);
    expect((await repo.claimDue(20, 60_000, { perEndpoint: 2, perTenant: 2 })).map((x) => x.id)).toEqual([
      d!.id,
    ]);
  });
});

describe('a disabled endpoint', () => {
  function failed(d: ClaimedDelivery): AttemptRecord {
    return { attempt: d.attempts, at: new Date().toISOString(), statusCode: 500, latencyMs: 3, error: null };
  }

  it('disabled for failing: its pending deliveries are settled as not sent, the one in flight is not retried', async () => {
    const tenantId = await newTenant();
    const hook = await newEndpoint(tenantId);
    await queue(tenantId, hook, 5);
    const [a, b] = await repo.claimDue(2, 60_000, { perEndpoint: 2, perTenant: 100 });
    // One more was attempted before (pending, due later): it was sent, so it is "not retried".
    const [retrying] = await db.withTenantSql({ tenantId }, (tx) =>
      tx.query<{ id: string }>(
        `UPDATE webhook_deliveries SET attempts = 1, next_attempt_at = now() + interval '1 hour'
          WHERE id = (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND locked_until IS NULL
                       ORDER BY next_attempt_at LIMIT 1)
         RETURNING id::text AS id`,
      ),
    );

    // A's failure ends the streak's window: the endpoint is disabled, though A's own window is not over.
    const at = Date.now() + 1_000;
    expect(
      await repo.recordAttempt(a!, failed(a!), {
        delivered: false,
        retryAt: new Date(at + 60_000),
        disableAfterMs: 0,
        at,
      }),
    ).toEqual({ disabled: true });
    const listed = async () =>
      new Map((await repo.deliveries({ tenantId }, hook, { limit: 10 })).map((d) => [d.id, d]));
    let all = await listed();
    const reason = (await repo.get({ tenantId }, hook)).disabledReason!;
    expect(reason).toMatch(/^disabled after failing since /);
    expect(all.get(a!.id)).toMatchObject({
      status: 'failed',
      attempts: 1,
      nextAttemptAt: null,
      lastError: `HTTP 500; not retried: the endpoint was ${reason}`,
    });
    // B is still in flight: left to its attempt.
    expect(all.get(b!.id)).toMatchObject({ status: 'pending' });
    expect(all.get(retrying!.id)).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastError: `not retried: the endpoint was ${reason}`,
    });
    const unsent = [...all.values()].filter((d) => d.attempts === 0 && d.id !== b!.id);
    expect(unsent).toHaveLength(2);
    for (const d of unsent)
      expect(d).toMatchObject({
        status: 'failed',
        attemptLog: [],
        nextAttemptAt: null,
        lastError: `not sent: the endpoint was ${reason}`,
      });

    // B's attempt fails after the endpoint was disabled: failed, not retried.
    await repo.recordAttempt(b!, failed(b!), {
      delivered: false,
      retryAt: new Date(Date.now() + 1_000),
      disableAfterMs: 60_000,
      at: Date.now(),
    });
    all = await listed();
    expect(all.get(b!.id)).toMatchObject({
      status: 'failed',
      lastError: `HTTP 500; not retried: the endpoint was ${reason}`,
    });
    expect([...all.values()].filter((d) => d.status === 'pending')).toEqual([]);
    expect(await repo.claimDue(20, 60_000, { perEndpoint: 10, perTenant: 100 })).toEqual([]);
  });

  it('disabled by its owner: its pending deliveries are settled as not sent; a delivery that raced it too', async () => {
    const tenantId = await newTenant();
    const hook = await newEndpoint(tenantId);
    await queue(tenantId, hook, 3);
    await repo.update({ tenantId }, hook, { enabled: false });
    const settled = await repo.deliveries({ tenantId }, hook, { limit: 10 });
    expect(settled.map((d) => [d.status, d.attempts, d.lastError])).toEqual(
      Array(3).fill(['failed', 0, 'not sent: the endpoint was disabled by its owner']),
    );

    // An event whose transaction read the endpoint enabled commits after the disabling: its delivery is leased
    // with the endpoint disabled, and settled as not sent, its lease not counted as an attempt.
    await queue(tenantId, hook, 1);
    const [raced] = await repo.claimDue(20, 60_000, { perEndpoint: 10, perTenant: 100 });
    expect(raced).toMatchObject({ webhookId: hook, enabled: false });
    await repo.settleUnsent(raced!);
    const [d] = await repo.deliveries({ tenantId }, hook, { status: 'pending', limit: 10 });
    expect(d).toBeUndefined();
    const all = await repo.deliveries({ tenantId }, hook, { limit: 10 });
    expect(all.find((x) => x.id === raced!.id)).toMatchObject({
      status: 'failed',
      attempts: 0,
      lastError: 'not sent: the endpoint was disabled by its owner',
    });

    // Enabled again: what was settled stays settled; the retry route sends one again.
    await repo.update({ tenantId }, hook, { enabled: true });
    expect(await repo.claimDue(20, 60_000, { perEndpoint: 10, perTenant: 100 })).toEqual([]);
    await repo.retry({ tenantId }, hook, raced!.id);
    expect((await repo.claimDue(20, 60_000, { perEndpoint: 10, perTenant: 100 })).map((x) => x.id)).toEqual([
      raced!.id,
    ]);
  });
});
