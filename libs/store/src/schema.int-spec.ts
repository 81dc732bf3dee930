// The database the migrations build matches the Prisma schema, and row-level security isolates tenants.
// Runs on the machine's Postgres, in a database of its own, as a role without superuser or BYPASSRLS.

import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '@canopy/testing';
import { CanopyException } from '@canopy/common';
import { Database, type Tx } from './database';
import { BASELINE_MIGRATION } from './migrator';
import { Prisma, $Enums } from './generated/prisma/client';

let testDb: TestDatabase;
let db: Database;
let raw: Client;

const snake = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = new Database({ url: testDb.url, poolMax: 4, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 });
  raw = new Client({ connectionString: testDb.url });
  await raw.connect();
});

afterAll(async () => {
  await raw?.end();
  await db?.disconnect();
  await testDb?.drop();
});

/** A new tenant; its name defaults to one of its own (tenant names are unique). */
async function newTenant(name?: string): Promise<string> {
  const id = randomUUID();
  name ??= `acme-${id.slice(0, 8)}`;
  await db.withTenant({ tenantId: id }, (tx) => tx.tenant.create({ data: { id, name } }));
  return id;
}

async function seedSession(tx: Tx, tenantId: string, id: string) {
  return tx.session.create({ data: { tenantId, id, model: 'mock:echo' } });
}

describe('the migrated database', () => {
  it('is used through a role that RLS applies to (no superuser, no BYPASSRLS)', async () => {
    const { rows } = await raw.query<{ rolsuper: boolean; rolbypassrls: boolean }>(
      'SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user',
    );
    expect(rows[0]).toEqual({ rolsuper: false, rolbypassrls: false });
  });

  it('records the migrations like prisma migrate deploy', async () => {
    const { rows } = await raw.query<{ migration_name: string; finished_at: Date | null }>(
      'SELECT migration_name, finished_at FROM _prisma_migrations',
    );
    expect(rows.map((r) => r.migration_name)).toContain(BASELINE_MIGRATION);
    expect(rows.every((r) => r.finished_at !== null)).toBe(true);
  });

  it.each([
    ['tenants', Prisma.TenantScalarFieldEnum],
    ['api_keys', Prisma.ApiKeyScalarFieldEnum],
    ['sessions', Prisma.SessionScalarFieldEnum],
    ['nodes', Prisma.NodeScalarFieldEnum],
    ['runs', Prisma.RunScalarFieldEnum],
    ['audit_events', Prisma.AuditEventScalarFieldEnum],
    ['webhooks', Prisma.WebhookScalarFieldEnum],
    ['webhook_deliveries', Prisma.WebhookDeliveryScalarFieldEnum],
    ['quotas', Prisma.QuotaScalarFieldEnum],
    ['provider_keys', Prisma.ProviderKeyScalarFieldEnum],
    ['usage_daily', Prisma.UsageDailyScalarFieldEnum],
    ['shares', Prisma.ShareScalarFieldEnum],
    ['feedback', Prisma.FeedbackScalarFieldEnum],
    ['run_stats_daily', Prisma.RunStatsDailyScalarFieldEnum],
  ])('has exactly the columns of the Prisma model for %s', async (table, fields) => {
    const { rows } = await raw.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1`,
      [table],
    );
    expect(rows.map((r) => r.column_name).sort()).toEqual(Object.values(fields).map(snake).sort());
  });

  it.each([
    ['session_status', $Enums.SessionStatus],
    ['run_kind', $Enums.RunKind],
    ['run_status', $Enums.RunStatus],
    ['message_role', $Enums.MessageRole],
  ])('has the values of the Prisma enum %s', async (type, values) => {
    const { rows } = await raw.query<{ label: string }>(
      `SELECT e.enumlabel AS label FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid
        WHERE t.typname = $1 ORDER BY e.enumsortorder`,
      [type],
    );
    expect(rows.map((r) => r.label)).toEqual(Object.values(values));
  });

  it('forces row-level security on every tenant table', async () => {
    const { rows } = await raw.query<{
      relname: string;
      relrowsecurity: boolean;
      relforcerowsecurity: boolean;
    }>(
      `SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class
        WHERE relname IN ('tenants', 'api_keys', 'sessions', 'nodes', 'runs', 'node_search', 'audit_events',
          'webhooks', 'webhook_deliveries', 'quotas', 'provider_keys', 'usage_daily', 'shares', 'feedback',
          'run_stats_daily')
        ORDER BY relname`,
    );
    expect(rows).toHaveLength(15);
    for (const r of rows) expect(r).toMatchObject({ relrowsecurity: true, relforcerowsecurity: true });
  });

  it('records every migration directory', async () => {
    const { rows } = await raw.query<{ migration_name: string }>(
      'SELECT migration_name FROM _prisma_migrations ORDER BY migration_name',
    );
    const directories = readdirSync(join(__dirname, '../../../prisma/migrations'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(rows.map((r) => r.migration_name)).toEqual(directories);
  });

  it('defines the hot-path functions SECURITY INVOKER, so row-level security applies to their caller', async () => {
    const { rows } = await raw.query<{ name: string; definer: boolean }>(
      `SELECT proname AS name, prosecdef AS definer FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace AND starts_with(proname, 'canopy_') ORDER BY proname`,
    );
    expect(rows.map((r) => r.name)).toEqual(
      expect.arrayContaining(['canopy_commit', 'canopy_enter', 'canopy_load_run', 'canopy_start_run']),
    );
    for (const r of rows) expect(r).toMatchObject({ definer: false });
  });
});

describe('every model through the generated client', () => {
  it('writes and reads back a tenant, an API key, a session with its tree nodes, and a run', async () => {
    const tenantId = await newTenant('Round Trip Inc');
    const message = {
      role: 'user',
      content: [{ type: 'text', text: 'héllo ✓' }],
      timestamp: 1_700_000_000_000,
    };
    const usage = { inputTokens: 3, outputTokens: 5, totalTokens: 8, totalCost: 0.0012 };

    const read = await db.withTenant({ tenantId }, async (tx) => {
      await tx.apiKey.create({
        data: { tenantId, name: 'ci', prefix: 'ck_abcd', keyHash: `hash-${tenantId}` },
      });
      await tx.session.create({
        data: {
          tenantId,
          id: 'sess-1',
          userId: 'user-7',
          title: 'A title',
          model: 'openai:gpt-4o',
          system: 'be brief',
          opts: { temperature: 0.2, serverTools: ['search'] },
          tools: [
            { name: 'ask', description: 'ask the user', inputSchema: { type: 'object' }, approval: true },
          ],
          metadata: { plan: 'pro', region: 'eu' },
          status: 'paused',
          path: [1, 2],
          cursors: { '1': 2 },
          head: 2,
          nextNodeId: 3,
          usage,
          idleShutdownAfterMs: 60_000,
        },
      });
      await tx.node.create({ data: { tenantId, sessionId: 'sess-1', id: 1, role: 'user', message } });
      await tx.node.create({
        data: { tenantId, sessionId: 'sess-1', id: 2, parentId: 1, role: 'assistant', message, usage },
      });
      const run = await tx.run.create({
        data: {
          tenantId,
          sessionId: 'sess-1',
          kind: 'branch',
          status: 'paused',
          input: { nodeId: 1 },
          pending: { toolUses: [{ id: 't1', name: 'ask', input: {} }] },
          error: { code: 'x', message: 'y' },
          usage,
          attempts: 2,
          startedAt: new Date('2026-01-01T00:00:00Z'),
          finishedAt: new Date('2026-01-01T00:00:01Z'),
        },
      });
      await tx.session.update({
        where: { tenantId_id: { tenantId, id: 'sess-1' } },
        data: { activeRunId: run.id },
      });
      return {
        tenant: await tx.tenant.findUniqueOrThrow({ where: { id: tenantId } }),
        key: await tx.apiKey.findFirstOrThrow({ where: { tenantId } }),
        session: await tx.session.findUniqueOrThrow({
          where: { tenantId_id: { tenantId, id: 'sess-1' } },
          include: { nodes: { orderBy: { id: 'asc' }, include: { children: true } }, runs: true },
        }),
      };
    });

    expect(read.tenant).toMatchObject({ id: tenantId, name: 'Round Trip Inc' });
    expect(read.tenant.createdAt).toBeInstanceOf(Date);
    expect(read.key).toMatchObject({
      name: 'ci',
      prefix: 'ck_abcd',
      keyHash: `hash-${tenantId}`,
      revokedAt: null,
    });
    expect(read.session).toMatchObject({
      userId: 'user-7',
      title: 'A title',
      model: 'openai:gpt-4o',
      system: 'be brief',
      opts: { temperature: 0.2, serverTools: ['search'] },
      tools: [{ name: 'ask', description: 'ask the user', inputSchema: { type: 'object' }, approval: true }],
      metadata: { plan: 'pro', region: 'eu' },
      status: 'paused',
      path: [1, 2],
      cursors: { '1': 2 },
      head: 2,
      nextNodeId: 3,
      usage,
      idleShutdownAfterMs: 60_000,
    });
    expect(read.session.nodes.map((n) => [n.id, n.parentId, n.role])).toEqual([
      [1, null, 'user'],
      [2, 1, 'assistant'],
    ]);
    expect(read.session.nodes[0]!.message).toEqual(message);
    expect(read.session.nodes[0]!.children.map((c) => c.id)).toEqual([2]);
    expect(read.session.nodes[1]!.usage).toEqual(usage);
    expect(read.session.runs).toHaveLength(1);
    expect(read.session.runs[0]).toMatchObject({
      kind: 'branch',
      status: 'paused',
      input: { nodeId: 1 },
      pending: { toolUses: [{ id: 't1', name: 'ask', input: {} }] },
      error: { code: 'x', message: 'y' },
      usage,
      attempts: 2,
      startedAt: new Date('2026-01-01T00:00:00Z'),
      finishedAt: new Date('2026-01-01T00:00:01Z'),
    });
    expect(read.session.activeRunId).toBe(read.session.runs[0]!.id);
  });

  it('finds sessions by a metadata key/value', async () => {
    const tenantId = await newTenant();
    const found = await db.withTenant({ tenantId }, async (tx) => {
      await tx.session.create({ data: { tenantId, id: 'a', model: 'mock:echo', metadata: { plan: 'pro' } } });
      await tx.session.create({
        data: { tenantId, id: 'b', model: 'mock:echo', metadata: { plan: 'free' } },
      });
      return tx.session.findMany({ where: { metadata: { path: ['plan'], equals: 'pro' } } });
    });
    expect(found.map((s) => s.id)).toEqual(['a']);
  });
});

describe('tree integrity', () => {
  it('rejects a node whose parent does not exist, or is not older than it', async () => {
    const tenantId = await newTenant();
    await db.withTenant({ tenantId }, (tx) => seedSession(tx, tenantId, 's'));
    const message = { role: 'user', content: [], timestamp: 0 };
    await expect(
      db.withTenant({ tenantId }, (tx) =>
        tx.node.create({ data: { tenantId, sessionId: 's', id: 2, parentId: 1, role: 'user', message } }),
      ),
    ).rejects.toBeInstanceOf(CanopyException); // foreign key: not_found
    await db.withTenant({ tenantId }, (tx) =>
      tx.node.create({ data: { tenantId, sessionId: 's', id: 5, role: 'user', message } }),
    );
    await expect(
      db.withTenant({ tenantId }, (tx) =>
        tx.node.create({ data: { tenantId, sessionId: 's', id: 4, parentId: 5, role: 'user', message } }),
      ),
    ).rejects.toThrow(/nodes_parent_check/);
  });

  it('deletes a session with its nodes and runs', async () => {
    const tenantId = await newTenant();
    const counts = await db.withTenant({ tenantId }, async (tx) => {
      await seedSession(tx, tenantId, 's');
      const message = { role: 'user', content: [], timestamp: 0 };
      await tx.node.create({ data: { tenantId, sessionId: 's', id: 1, role: 'user', message } });
      await tx.node.create({
        data: { tenantId, sessionId: 's', id: 2, parentId: 1, role: 'assistant', message },
      });
      await tx.run.create({ data: { tenantId, sessionId: 's', kind: 'prompt' } });
      await tx.session.delete({ where: { tenantId_id: { tenantId, id: 's' } } });
      return [await tx.node.count(), await tx.run.count()];
    });
    expect(counts).toEqual([0, 0]);
  });

  it("holds a node's tenant through its session: no node of a session of another tenant, none left by a deleted tenant", async () => {
    const tenantId = await newTenant();
    const other = await newTenant();
    await db.withTenant({ tenantId }, (tx) => seedSession(tx, tenantId, 'mine'));
    const message = { role: 'user', content: [], timestamp: 0 };
    // The other tenant has no session 'mine': its node would belong to no session of its own.
    await expect(
      db.withTenant({ tenantId: other }, (tx) =>
        tx.node.create({ data: { tenantId: other, sessionId: 'mine', id: 1, role: 'user', message } }),
      ),
    ).rejects.toBeInstanceOf(CanopyException);
    await db.withTenant({ tenantId }, (tx) =>
      tx.node.create({ data: { tenantId, sessionId: 'mine', id: 1, role: 'user', message } }),
    );
    const left = await db.withAdmin('test: delete a tenant', async (tx) => {
      await tx.tenant.delete({ where: { id: tenantId } });
      return tx.node.count({ where: { tenantId } });
    });
    expect(left).toBe(0);
  });

  it('answers already_exists for a session id used twice in a tenant, but not across tenants', async () => {
    const a = await newTenant();
    const b = await newTenant();
    await db.withTenant({ tenantId: a }, (tx) => seedSession(tx, a, 'same-id'));
    await expect(db.withTenant({ tenantId: a }, (tx) => seedSession(tx, a, 'same-id'))).rejects.toMatchObject(
      {
        code: 'already_exists',
      },
    );
    await expect(
      db.withTenant({ tenantId: b }, (tx) => seedSession(tx, b, 'same-id')),
    ).resolves.toBeDefined();
  });
});

describe('row-level security', () => {
  let a: string;
  let b: string;

  beforeAll(async () => {
    a = await newTenant('A');
    b = await newTenant('B');
    for (const t of [a, b]) {
      await db.withTenant({ tenantId: t }, async (tx) => {
        await tx.apiKey.create({ data: { tenantId: t, prefix: 'ck_x', keyHash: `rls-${t}` } });
        await seedSession(tx, t, `rls-${t}`);
        await tx.node.create({
          data: { tenantId: t, sessionId: `rls-${t}`, id: 1, role: 'user', message: { t } },
        });
        await tx.run.create({ data: { tenantId: t, sessionId: `rls-${t}`, kind: 'prompt' } });
      });
    }
  });

  const visible = (tx: Tx) =>
    Promise.all([
      tx.tenant.findMany({ select: { id: true } }).then((r) => r.map((x) => x.id)),
      tx.apiKey.findMany({ select: { tenantId: true } }).then((r) => r.map((x) => x.tenantId)),
      tx.session.findMany({ select: { tenantId: true } }).then((r) => r.map((x) => x.tenantId)),
      tx.node.findMany({ select: { tenantId: true } }).then((r) => r.map((x) => x.tenantId)),
      tx.run.findMany({ select: { tenantId: true } }).then((r) => r.map((x) => x.tenantId)),
    ]);

  it("hides every row of one tenant from another tenant's transaction", async () => {
    for (const [me, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const seen = await db.withTenant({ tenantId: me }, visible);
      for (const tenantIds of seen) {
        expect(tenantIds.length).toBeGreaterThan(0);
        expect(tenantIds).not.toContain(other);
        expect(new Set(tenantIds)).toEqual(new Set([me]));
      }
    }
  });

  it('hides even rows asked for by id from the other tenant', async () => {
    const found = await db.withTenant({ tenantId: a }, (tx) =>
      tx.session.findUnique({ where: { tenantId_id: { tenantId: b, id: `rls-${b}` } } }),
    );
    expect(found).toBeNull();
  });

  it('refuses to write rows for another tenant', async () => {
    await expect(db.withTenant({ tenantId: a }, (tx) => seedSession(tx, b, 'smuggled'))).rejects.toThrow(
      /row-level security/,
    );
    const updated = await db.withTenant({ tenantId: a }, (tx) =>
      tx.session.updateMany({ where: { tenantId: b }, data: { title: 'pwned' } }),
    );
    expect(updated.count).toBe(0);
    const deleted = await db.withTenant({ tenantId: a }, (tx) =>
      tx.node.deleteMany({ where: { tenantId: b } }),
    );
    expect(deleted.count).toBe(0);
  });

  it('shows nothing to a query that set no tenant, even on the same connection after a scoped transaction', async () => {
    await raw.query('BEGIN');
    await raw.query("SELECT set_config('canopy.tenant_id', $1, true)", [a]);
    expect((await raw.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n).toBeGreaterThan(0);
    await raw.query('COMMIT');
    for (const table of ['tenants', 'api_keys', 'sessions', 'nodes', 'runs']) {
      expect((await raw.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n).toBe(0);
    }
  });

  it('lets the key lookup read one key row by its hash and nothing else', async () => {
    const seen = await db.withKeyHash(`rls-${b}`, (tx) =>
      Promise.all([tx.apiKey.findMany(), tx.tenant.count(), tx.session.count()]),
    );
    expect(seen[0].map((k) => k.tenantId)).toEqual([b]);
    expect(seen[1]).toBe(0);
    expect(seen[2]).toBe(0);
  });

  it('spans tenants only in an explicit admin transaction', async () => {
    const ids = await db.withAdmin('test: cross-tenant read', (tx) =>
      tx.tenant.findMany({ where: { id: { in: [a, b] } }, select: { id: true } }),
    );
    expect(ids.map((t) => t.id).sort()).toEqual([a, b].sort());
  });

  it('answers not_found for a scope whose tenant id is not a tenant id at all', async () => {
    await expect(db.withTenant({ tenantId: 'not-a-uuid' }, visible)).rejects.toMatchObject({
      code: 'not_found',
    });
  });
});
