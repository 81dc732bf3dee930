// Senders against the real database and a local receiver whose endpoints never answer (those under /ok answer
// 200 at once). One sender keeps at most WEBHOOK_MAX_IN_FLIGHT attempts in flight (and each endpoint at most its
// own limit), fills a slot again as soon as an attempt ends, and stops within its bounded wait though attempts
// still hang. A tenant with more hanging endpoints than a sender has slots holds at most its own bound across two
// senders, and another tenant's deliveries go out meanwhile; the attempts of an endpoint deleted while they hang
// still count against its tenant.

import { randomUUID } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TargetPolicy } from '@canopy/common';
import { createTestDatabase, eventually, type TestDatabase } from '@canopy/testing';
import { Database } from '@canopy/store';
import { WebhookDispatcher } from './webhook-dispatcher';
import { WebhooksRepository } from './webhooks.repository';

const PROCESS_LIMIT = 3;
const ENDPOINT_LIMIT = 2;
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

let testDb: TestDatabase;
let db: Database;
let repo: WebhooksRepository;
let server: Server;
let baseUrl: string;
/** Requests open now, by path (one path per endpoint). */
const open = new Map<string, Set<ServerResponse>>();
let maxOpen = 0;
const maxOpenByPath = new Map<string, number>();
let requests = 0;
/** Called as each request arrives, after it is counted open. */
let onRequest: (() => void) | null = null;

const openCount = () => [...open.values()].reduce((n, s) => n + s.size, 0);

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = new Database({ url: testDb.url, poolMax: 4, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 });
  repo = new WebhooksRepository(db);
  server = createServer((req, res) => {
    requests++;
    const path = req.url ?? '/';
    const mine = open.get(path) ?? new Set<ServerResponse>();
    open.set(path, mine);
    mine.add(res);
    maxOpen = Math.max(maxOpen, openCount());
    maxOpenByPath.set(path, Math.max(maxOpenByPath.get(path) ?? 0, mine.size));
    onRequest?.();
    res.on('close', () => mine.delete(res));
    req.resume(); // read the body
    if (path.startsWith('/ok')) res.writeHead(200).end('ok');
    // else never answer
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

// Each test starts with no attempt open and an empty outbox (a stopped sender's attempts may still hang).
afterEach(async () => {
  for (const res of [...open.values()].flatMap((set) => [...set])) res.destroy();
  open.clear();
  maxOpenByPath.clear();
  maxOpen = 0;
  requests = 0;
  await db.withAdminSql('test: empty the outbox', (tx) => tx.query('DELETE FROM webhook_deliveries'));
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await db?.disconnect();
  await testDb?.drop();
});

async function newTenant(): Promise<string> {
  const tenantId = randomUUID();
  await db.withTenant({ tenantId }, (tx) =>
    tx.tenant.create({ data: { id: tenantId, name: `dispatcher-test-${tenantId.slice(0, 8)}` } }),
  );
  return tenantId;
}

/** An endpoint of the tenant at `path` with `n` deliveries due. */
async function endpoint(tenantId: string, path: string, n: number): Promise<string> {
  const hook = await repo.create(
    { tenantId },
    { url: `${baseUrl}${path}`, events: ['run.completed'], enabled: true, description: null, secret: SECRET },
  );
  await db.withTenantSql({ tenantId }, (tx) =>
    tx.query(
      `INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_type, payload)
       SELECT $1::uuid, $2::uuid, 'run.completed', '{}'::jsonb FROM generate_series(1, $3::int)`,
      [tenantId, hook.id, n],
    ),
  );
  return hook.id;
}

it('keeps at most its limit of attempts in flight, refills a slot as an attempt ends, and stops while they hang', async () => {
  const tenantId = await newTenant();
  for (let e = 0; e < 3; e++) await endpoint(tenantId, `/endpoint-${e}`, 5);
  const dispatcher = new WebhookDispatcher(
    repo,
    {
      pollMs: 20,
      timeoutMs: 120_000,
      retryBaseMs: 100,
      retryWindowMs: 3_600_000,
      targets: TargetPolicy.anywhere,
      maxInFlight: PROCESS_LIMIT,
      maxInFlightPerEndpoint: ENDPOINT_LIMIT,
      maxInFlightPerTenant: 10,
    },
    quiet,
  );
  dispatcher.start();
  try {
    await eventually(() => expect(openCount()).toBe(PROCESS_LIMIT), { timeoutMs: 10_000 });
    expect(requests).toBe(PROCESS_LIMIT);

    // One attempt ends (the receiver goes away for it): the slot is filled again, still never above the limit.
    const [first] = [...open.values()].flatMap((s) => [...s]);
    first!.destroy();
    await eventually(() => expect(requests).toBe(PROCESS_LIMIT + 1), { timeoutMs: 10_000 });
    await eventually(() => expect(openCount()).toBe(PROCESS_LIMIT), { timeoutMs: 10_000 });
    expect(maxOpen).toBe(PROCESS_LIMIT);
    expect(Math.max(...maxOpenByPath.values())).toBeLessThanOrEqual(ENDPOINT_LIMIT);
  } finally {
    // Stopping does not wait for attempts that hang past its bounded moment.
    await dispatcher.stop();
  }
  expect(openCount()).toBe(PROCESS_LIMIT);
});

it("a tenant's many hanging endpoints hold at most its bound across senders; another tenant's deliveries go out", async () => {
  const TENANT_LIMIT = 4;
  // 10 endpoints that never answer, 3 deliveries each: 20 attempts by the endpoint limit, more than both senders'
  // slots (2 × 8).
  const hostile = await newTenant();
  for (let e = 0; e < 10; e++) await endpoint(hostile, `/hang-${e}`, 3);
  const senders = [1, 2].map(
    () => new Database({ url: testDb.url, poolMax: 2, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 }),
  );
  const dispatchers = senders.map(
    (s) =>
      new WebhookDispatcher(
        new WebhooksRepository(s),
        {
          pollMs: 20,
          timeoutMs: 120_000,
          retryBaseMs: 100,
          retryWindowMs: 3_600_000,
          targets: TargetPolicy.anywhere,
          maxInFlight: 8,
          maxInFlightPerEndpoint: ENDPOINT_LIMIT,
          maxInFlightPerTenant: TENANT_LIMIT,
        },
        quiet,
      ),
  );
  const hanging = () =>
    [...open].filter(([path]) => path.startsWith('/hang')).reduce((n, [, s]) => n + s.size, 0);
  let maxHanging = 0;
  onRequest = () => (maxHanging = Math.max(maxHanging, hanging()));
  for (const d of dispatchers) d.start();
  try {
    await eventually(() => expect(hanging()).toBeGreaterThanOrEqual(TENANT_LIMIT), { timeoutMs: 10_000 });

    // Another tenant's deliveries are leased and delivered while the hostile tenant's attempts all still hang.
    const neighbour = await newTenant();
    const hook = await endpoint(neighbour, '/ok-neighbour', 3);
    await eventually(
      async () =>
        expect(
          (await repo.deliveries({ tenantId: neighbour }, hook, { limit: 10 })).map((d) => d.status),
        ).toEqual(['delivered', 'delivered', 'delivered']),
      { timeoutMs: 10_000 },
    );
    await eventually(() => expect(hanging()).toBe(TENANT_LIMIT), { timeoutMs: 10_000 });
    // Never more than its bound at once, though both senders had free slots throughout.
    expect(maxHanging).toBe(TENANT_LIMIT);
    const hostileRequests = [...maxOpenByPath].filter(([path]) => path.startsWith('/hang'));
    expect(hostileRequests.every(([, n]) => n <= ENDPOINT_LIMIT)).toBe(true);
  } finally {
    onRequest = null;
    await Promise.all(dispatchers.map((d) => d.stop()));
    await Promise.all(senders.map((s) => s.disconnect()));
  }
});

it("a deleted endpoint's attempts still hanging count against its tenant until they end", async () => {
  const TENANT_LIMIT = 2;
  const dispatcher = new WebhookDispatcher(
    repo,
    {
      pollMs: 20,
      timeoutMs: 120_000,
      retryBaseMs: 100,
      retryWindowMs: 3_600_000,
      targets: TargetPolicy.anywhere,
      maxInFlight: 8,
      maxInFlightPerEndpoint: ENDPOINT_LIMIT,
      maxInFlightPerTenant: TENANT_LIMIT,
    },
    quiet,
  );
  const openAt = (path: string) => open.get(path)?.size ?? 0;
  const tenantId = await newTenant();
  const gone = await endpoint(tenantId, '/hang-gone', 2);
  dispatcher.start();
  try {
    await eventually(() => expect(openAt('/hang-gone')).toBe(TENANT_LIMIT), { timeoutMs: 10_000 });
    // Deleted while its attempts hang: its deliveries and their leases go, the attempts do not.
    await repo.delete({ tenantId }, gone);
    const next = await endpoint(tenantId, '/hang-next', 2);
    // Another tenant's delivery, due after the new endpoint's, goes out: leases ran with those due.
    const neighbour = await newTenant();
    const okHook = await endpoint(neighbour, '/ok-after-delete', 1);
    await eventually(
      async () =>
        expect((await repo.deliveries({ tenantId: neighbour }, okHook, { limit: 10 }))[0]?.status).toBe(
          'delivered',
        ),
      { timeoutMs: 10_000 },
    );
    const attempted = async () =>
      (await repo.deliveries({ tenantId }, next, { limit: 10 })).filter((d) => d.attempts > 0).length;
    expect(await attempted()).toBe(0);
    expect(openAt('/hang-next')).toBe(0);

    // One of the deleted endpoint's attempts ends: its tenant has a slot again.
    [...open.get('/hang-gone')!][0]!.destroy();
    await eventually(() => expect(openAt('/hang-next')).toBe(1), { timeoutMs: 10_000 });
    expect(await attempted()).toBe(1);
    expect(openAt('/hang-gone') + openAt('/hang-next')).toBe(TENANT_LIMIT);
  } finally {
    await dispatcher.stop();
  }
});
