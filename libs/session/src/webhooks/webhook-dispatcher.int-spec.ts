// One sender process against the real database and a local receiver that never answers: it keeps at most
// WEBHOOK_MAX_IN_FLIGHT attempts in flight (and each endpoint at most its own limit), fills a slot again as soon as
// an attempt ends, and stops within its bounded wait though attempts still hang.

import { randomUUID } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TargetPolicy } from '@canopy/common';
import { createTestDatabase, eventually, type TestDatabase } from '@canopy/testing';
import { Database, WebhooksRepository } from '@canopy/store';
import { WebhookDispatcher } from './webhook-dispatcher';

const PROCESS_LIMIT = 3;
const ENDPOINT_LIMIT = 2;

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
    res.on('close', () => mine.delete(res));
    req.resume(); // read the body; never answer
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await db?.disconnect();
  await testDb?.drop();
});

it('keeps at most its limit of attempts in flight, refills a slot as an attempt ends, and stops while they hang', async () => {
  const tenantId = randomUUID();
  await db.withTenant({ tenantId }, (tx) =>
    tx.tenant.create({ data: { id: tenantId, name: `dispatcher-test-${tenantId.slice(0, 8)}` } }),
  );
  for (let e = 0; e < 3; e++) {
    const hook = await repo.create(
      { tenantId },
      {
        url: `${baseUrl}/endpoint-${e}`,
        events: ['run.completed'],
        enabled: true,
        description: null,
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      },
    );
    await db.withTenantSql({ tenantId }, (tx) =>
      tx.query(
        `INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_type, payload)
         SELECT $1::uuid, $2::uuid, 'run.completed', '{}'::jsonb FROM generate_series(1, 5)`,
        [tenantId, hook.id],
      ),
    );
  }
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
    },
    { info: () => undefined, warn: () => undefined, error: () => undefined },
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
