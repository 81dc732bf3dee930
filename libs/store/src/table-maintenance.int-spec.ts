// Table upkeep against the machine's Postgres: tables grown from empty (never analyzed) get statistics, and then
// the hot path's lookups plan on their primary keys even as generic plans (what PL/pgSQL functions and foreign-key
// checks cache per connection), instead of walking a tenant's runs or a session's nodes through another index.

import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createTestDatabase, eventually, type TestDatabase } from '@canopy/testing';
import { Database } from './database';
import { TableMaintenance, upkeepNeeded } from './table-maintenance';

let testDb: TestDatabase;
let db: Database;
let tenant: string;

// Big enough that an index beats a sequential scan of the table.
const SESSIONS = 2_000;
const RUNS_PER_SESSION = 5;
const NODES_PER_SESSION = 20;

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = new Database({ url: testDb.url, poolMax: 2, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 });
  tenant = randomUUID();
  await db.withTenantSql({ tenantId: tenant }, async (tx) => {
    await tx.query('INSERT INTO tenants (id, name) VALUES ($1::uuid, $2)', [tenant, 'upkeep']);
    await tx.query(
      `INSERT INTO sessions (tenant_id, id, model) SELECT $1::uuid, 's' || g, 'mock:echo' FROM generate_series(1, $2) g`,
      [tenant, SESSIONS],
    );
    await tx.query(
      `INSERT INTO runs (tenant_id, session_id, kind, status)
       SELECT $1::uuid, 's' || s, 'prompt', 'completed' FROM generate_series(1, $2) s, generate_series(1, $3) r`,
      [tenant, SESSIONS, RUNS_PER_SESSION],
    );
    await tx.query(
      `INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message)
       SELECT $1::uuid, 's' || s, n, NULLIF(n - 1, 0), 'user', '{"role":"user","content":[]}'
         FROM generate_series(1, $2) s, generate_series(1, $3) n`,
      [tenant, SESSIONS, NODES_PER_SESSION],
    );
  });
});

afterAll(async () => {
  await db?.disconnect();
  await testDb?.drop();
});

/** The index a statement's generic plan scans (as the test role, with the tenant set), else its first scan node. */
async function genericPlanIndex(sql: string, params: unknown[]): Promise<string | null> {
  const client = new Client({ connectionString: testDb.url });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT set_config('canopy.tenant_id', $1, true)`, [tenant]);
    await client.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
    await client.query(`PREPARE hot AS ${sql}`);
    const args = params.map((p) => (typeof p === 'number' ? String(p) : `'${String(p)}'`)).join(', ');
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
      `EXPLAIN (FORMAT JSON) EXECUTE hot(${args})`,
    );
    const indexes: string[] = [];
    const walk = (node: Record<string, unknown>) => {
      if (typeof node['Index Name'] === 'string') indexes.push(node['Index Name']);
      else if (String(node['Node Type']).endsWith('Scan')) indexes.push(String(node['Node Type']));
      for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    walk((rows[0]!['QUERY PLAN'] as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
    return indexes[0] ?? null;
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    await client.end();
  }
}

/** The lookups of the hot path (canopy_start_run, canopy_commit, canopy_load_run, the nodes' foreign-key check). */
const HOT_LOOKUPS: Array<{ name: string; sql: string; params: () => unknown[]; index: string }> = [
  {
    name: 'the session row, locked (the commit fence)',
    sql: 'SELECT usage FROM sessions WHERE tenant_id = $1::uuid AND id = $2 FOR UPDATE',
    params: () => [tenant, 's7'],
    index: 'sessions_pkey',
  },
  {
    name: 'the session row, updated',
    sql: 'UPDATE sessions SET updated_at = now() WHERE tenant_id = $1::uuid AND id = $2',
    params: () => [tenant, 's7'],
    index: 'sessions_pkey',
  },
  {
    name: 'the run row',
    sql: 'SELECT steer FROM runs WHERE tenant_id = $1::uuid AND id = $2::uuid',
    params: () => [tenant, randomUUID()],
    index: 'runs_pkey',
  },
  {
    name: 'the run row, updated',
    sql: 'UPDATE runs SET updated_at = now() WHERE tenant_id = $1::uuid AND id = $2::uuid',
    params: () => [tenant, randomUUID()],
    index: 'runs_pkey',
  },
  {
    name: "a new node's parent (the foreign-key check)",
    sql: 'SELECT 1 FROM nodes WHERE tenant_id = $1::uuid AND session_id = $2 AND id = $3 FOR KEY SHARE',
    params: () => [tenant, 's7', 12],
    index: 'nodes_pkey',
  },
];

describe('table upkeep', () => {
  it('analyzes tables that grew from empty, and the hot lookups then plan on their primary keys', async () => {
    // A backend reports its rows' statistics once idle, up to seconds after its transaction.
    await eventually(
      async () => {
        const before = await db.tableActivity();
        for (const t of ['sessions', 'runs', 'nodes']) {
          const activity = before.find((a) => a.table === t);
          expect(activity).toMatchObject({ analyzed: false });
          expect(activity!.modifiedSinceAnalyze).toBeGreaterThan(0);
        }
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    const upkeep = new TableMaintenance(db, { vacuum: false, intervalMs: 60_000 });
    const done = await upkeep.runOnce();
    expect(done.analyzed).toEqual(expect.arrayContaining(['sessions', 'runs', 'nodes']));
    expect(done.vacuumed).toEqual([]);
    const after = await db.tableActivity();
    for (const t of ['sessions', 'runs', 'nodes']) {
      expect(after.find((a) => a.table === t)).toMatchObject({ analyzed: true, modifiedSinceAnalyze: 0 });
    }
    for (const lookup of HOT_LOOKUPS) {
      expect({ lookup: lookup.name, index: await genericPlanIndex(lookup.sql, lookup.params()) }).toEqual({
        lookup: lookup.name,
        index: lookup.index,
      });
    }
    // Nothing changed since: the next pass does nothing.
    expect(await upkeep.runOnce()).toEqual({ analyzed: [], vacuumed: [] });
  });

  it('analyzes a table in one statement after the counters were read, and refuses a table not its own', async () => {
    const pool = (db as unknown as { pool: { query: (...args: unknown[]) => unknown } }).pool;
    await db.tableActivity();
    const query = jest.spyOn(pool, 'query');
    try {
      await db.upkeep('analyze', 'runs');
      expect(query.mock.calls.map((call) => String(call[0]))).toEqual(['ANALYZE "runs"']);
    } finally {
      query.mockRestore();
    }
    await expect(db.upkeep('analyze', 'pg_class')).rejects.toThrow('upkeep: unknown table "pg_class"');
  });

  it('vacuums tables with many dead rows when asked to (the embedded database)', async () => {
    await db.withTenantSql({ tenantId: tenant }, (tx) =>
      tx.query(`UPDATE nodes SET usage = '{}' WHERE tenant_id = $1::uuid`, [tenant]),
    );
    const upkeep = new TableMaintenance(db, { vacuum: true, intervalMs: 60_000 });
    // The dead rows reach pg_stat_user_tables once the backend reports them.
    await eventually(async () => expect((await upkeep.runOnce()).vacuumed).toContain('nodes'), {
      timeoutMs: 20_000,
      intervalMs: 200,
    });
  });
});

describe('upkeepNeeded', () => {
  const table = { table: 't', liveRows: 1_000, deadRows: 0, modifiedSinceAnalyze: 0, analyzed: true };

  it('analyzes once a tenth of the table changed (at least 10 rows), never a quiet table', () => {
    expect(upkeepNeeded(table, false)).toBeNull();
    expect(upkeepNeeded({ ...table, modifiedSinceAnalyze: 99 }, false)).toBeNull();
    expect(upkeepNeeded({ ...table, modifiedSinceAnalyze: 100 }, false)).toBe('analyze');
    expect(upkeepNeeded({ ...table, liveRows: 5, modifiedSinceAnalyze: 9 }, false)).toBeNull();
    expect(upkeepNeeded({ ...table, liveRows: 5, modifiedSinceAnalyze: 10 }, false)).toBe('analyze');
  });

  it('vacuums only when asked to, once the dead rows are many', () => {
    expect(upkeepNeeded({ ...table, deadRows: 5_000 }, false)).toBeNull();
    expect(upkeepNeeded({ ...table, deadRows: 999 }, true)).toBeNull();
    expect(upkeepNeeded({ ...table, deadRows: 1_000 }, true)).toBe('vacuum');
    expect(upkeepNeeded({ ...table, liveRows: 100_000, deadRows: 19_999 }, true)).toBeNull();
  });
});
