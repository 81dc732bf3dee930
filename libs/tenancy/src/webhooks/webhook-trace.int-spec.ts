// Webhook deliveries carry the trace of what caused them (OpenTelemetry on): the transaction that wrote an event
// inside a traced operation keeps its traceparent with each delivery (canopy_webhook_enqueue), and the attempt is a
// `canopy.webhook.deliver` span of that trace whose context the request sends as `traceparent`. Without a trace,
// nothing is kept and no traceparent is sent.

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind } from '@opentelemetry/api';
import { TargetPolicy, canopyTracer } from '@canopy/common';
import { InMemoryTelemetry, createTestDatabase, eventually, type TestDatabase } from '@canopy/testing';
import { Database } from '@canopy/store';
import { WebhookDispatcher } from './webhook-dispatcher';
import { WebhooksRepository } from './webhooks.repository';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

let telemetry: InMemoryTelemetry;
let testDb: TestDatabase;
let db: Database;
let repo: WebhooksRepository;
let server: Server;
let baseUrl: string;
const received: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  telemetry = InMemoryTelemetry.start();
  testDb = await createTestDatabase();
  db = new Database({ url: testDb.url, poolMax: 4, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 });
  repo = new WebhooksRepository(db);
  server = createServer((req, res) => {
    received.push(req.headers);
    req.resume();
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await db?.disconnect();
  await testDb?.drop();
  await telemetry.shutdown();
});

async function tenantWithEndpoint(): Promise<{ tenantId: string; hookId: string }> {
  const tenantId = randomUUID();
  await db.withTenant({ tenantId }, (tx) =>
    tx.tenant.create({ data: { id: tenantId, name: `trace-test-${tenantId.slice(0, 8)}` } }),
  );
  const hook = await repo.create(
    { tenantId },
    { url: `${baseUrl}/hook`, events: ['run.completed'], enabled: true, description: null, secret: SECRET },
  );
  return { tenantId, hookId: hook.id };
}

/** Writes one event as the run's commit would: in a transaction of the tenant, through the outbox writer. */
function writeEvent(tenantId: string) {
  return db.withTenantSql({ tenantId }, (tx) =>
    tx.query(`SELECT canopy_webhook_enqueue($1::uuid, 'run.completed', '{"runId":"r1"}'::jsonb)`, [tenantId]),
  );
}

async function deliverAll(): Promise<void> {
  const dispatcher = new WebhookDispatcher(
    repo,
    {
      pollMs: 20,
      timeoutMs: 5_000,
      retryBaseMs: 100,
      retryWindowMs: 60_000,
      targets: TargetPolicy.anywhere,
      maxInFlight: 4,
      maxInFlightPerEndpoint: 4,
      maxInFlightPerTenant: 4,
    },
    quiet,
  );
  dispatcher.start();
  try {
    await eventually(
      async () => {
        const [row] = await db.withAdminSql('test: pending deliveries', (tx) =>
          tx.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'`,
          ),
        );
        if (row!.n > 0) throw new Error(`${row!.n} deliveries pending`);
      },
      { timeoutMs: 10_000 },
    );
  } finally {
    await dispatcher.stop();
  }
}

it('a delivery written inside a traced run is an attempt span of that trace, sent with its traceparent', async () => {
  const { tenantId } = await tenantWithEndpoint();
  const run = await canopyTracer().startActiveSpan('invoke_agent', async (span) => {
    await writeEvent(tenantId);
    span.end();
    return span.spanContext();
  });
  const [row] = await db.withAdminSql('test: the delivery', (tx) =>
    tx.query<{ trace_context: string | null }>(
      `SELECT trace_context FROM webhook_deliveries WHERE tenant_id = $1::uuid`,
      [tenantId],
    ),
  );
  expect(row!.trace_context).toBe(`00-${run.traceId}-${run.spanId}-01`);

  received.length = 0;
  await deliverAll();
  const spans = await telemetry.spans();
  const attempt = spans.find((s) => s.name === 'canopy.webhook.deliver')!;
  expect(attempt.kind).toBe(SpanKind.CLIENT);
  expect(attempt.spanContext().traceId).toBe(run.traceId);
  expect(attempt.parentSpanContext?.spanId).toBe(run.spanId);
  expect(attempt.attributes).toMatchObject({
    'canopy.webhook.event': 'run.completed',
    'server.address': '127.0.0.1',
    'http.response.status_code': 204,
  });
  expect(received).toHaveLength(1);
  expect(received[0]!.traceparent).toBe(`00-${run.traceId}-${attempt.spanContext().spanId}-01`);
  // The Standard Webhooks headers are there as ever.
  expect(received[0]!['webhook-signature']).toMatch(/^v1,/);
});

it('keeps no trace for an event written outside one: its attempt starts a trace of its own', async () => {
  const { tenantId } = await tenantWithEndpoint();
  await writeEvent(tenantId);
  const [row] = await db.withAdminSql('test: the delivery', (tx) =>
    tx.query<{ trace_context: string | null }>(
      `SELECT trace_context FROM webhook_deliveries WHERE tenant_id = $1::uuid`,
      [tenantId],
    ),
  );
  expect(row!.trace_context).toBeNull();
  await telemetry.reset();
  received.length = 0;
  await deliverAll();
  // The attempt is a trace of its own (a root span): its context is what the receiver gets.
  const attempt = (await telemetry.spans()).find((s) => s.name === 'canopy.webhook.deliver')!;
  expect(attempt.parentSpanContext).toBeUndefined();
  expect(received[0]!.traceparent).toBe(
    `00-${attempt.spanContext().traceId}-${attempt.spanContext().spanId}-01`,
  );
});
