// The raw-SQL road of Database (withTenantSql / withAdminSql) against the machine's Postgres, as a role RLS
// applies to: the same isolation as the Prisma road, nothing left on a pooled connection after a transaction,
// rollback on failure, one pool for both roads, the transaction deadline, the pool's wait, and error mapping.

import { randomUUID } from 'node:crypto';
import { CanopyException } from '@canopy/common';
import { createTestDatabase, eventually, type TestDatabase } from '@canopy/testing';
import { Database, type SqlTx } from './database';

let testDb: TestDatabase;
let db: Database;
let a: string;
let b: string;

const opened: Database[] = [];

/** A Database of its own (closed after the file), e.g. with a pool of one to see connection reuse. */
function open(options: Partial<ConstructorParameters<typeof Database>[0]> = {}): Database {
  const created = new Database({
    url: testDb.url,
    poolMax: 4,
    txMaxWaitMs: 5_000,
    txTimeoutMs: 10_000,
    ...options,
  });
  opened.push(created);
  return created;
}

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = open();
  a = await newTenant('A');
  b = await newTenant('B');
  for (const t of [a, b]) {
    await db.withTenantSql({ tenantId: t }, async (tx) => {
      await tx.query(`INSERT INTO sessions (tenant_id, id, model) VALUES ($1::uuid, $2, 'm')`, [t, `s-${t}`]);
      await tx.query(`INSERT INTO runs (tenant_id, session_id, kind) VALUES ($1::uuid, $2, 'prompt')`, [
        t,
        `s-${t}`,
      ]);
    });
  }
});

afterAll(async () => {
  for (const d of opened) await d.disconnect();
  await testDb?.drop();
});

async function newTenant(name: string): Promise<string> {
  const id = randomUUID();
  await db.withTenantSql({ tenantId: id }, (tx) =>
    tx.query('INSERT INTO tenants (id, name) VALUES ($1::uuid, $2)', [id, name]),
  );
  return id;
}

const visible = (tx: SqlTx) =>
  tx.query<{ tenants: string[]; sessions: string[]; runs: string[] }>(
    `SELECT ARRAY(SELECT id::text FROM tenants) AS tenants,
            ARRAY(SELECT tenant_id::text FROM sessions) AS sessions,
            ARRAY(SELECT tenant_id::text FROM runs) AS runs`,
  );

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (e: unknown) => (e instanceof CanopyException ? e.code : `not a CanopyException: ${String(e)}`),
  );

describe('withTenantSql', () => {
  it("sees the scope's tenant only, like withTenant", async () => {
    for (const [me, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const [seen] = await db.withTenantSql({ tenantId: me }, visible);
      expect(seen).toEqual({ tenants: [me], sessions: [me], runs: [me] });
      const [byId] = await db.withTenantSql({ tenantId: me }, (tx) =>
        tx.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions WHERE tenant_id = $1::uuid', [
          other,
        ]),
      );
      expect(byId?.n).toBe(0);
    }
    const [nobody] = await db.withTenantSql({ tenantId: randomUUID() }, visible);
    expect(nobody).toEqual({ tenants: [], sessions: [], runs: [] });
  });

  it("refuses to write another tenant's rows", async () => {
    await expect(
      db.withTenantSql({ tenantId: a }, (tx) =>
        tx.query(`INSERT INTO sessions (tenant_id, id, model) VALUES ($1::uuid, 'smuggled', 'm')`, [b]),
      ),
    ).rejects.toThrow(/row-level security/);
    const updated = await db.withTenantSql({ tenantId: a }, (tx) =>
      tx.query(`UPDATE sessions SET title = 'pwned' WHERE tenant_id = $1::uuid RETURNING id`, [b]),
    );
    expect(updated).toEqual([]);
  });

  it('answers not_found for a tenant id that is no uuid, before touching the database', async () => {
    let ran = false;
    const attempt = db.withTenantSql(
      { tenantId: "x'); SELECT set_config('canopy.admin', 'on', true); --" },
      () => {
        ran = true;
        return Promise.resolve();
      },
    );
    expect(await codeOf(attempt)).toBe('not_found');
    expect(ran).toBe(false);
  });

  it('leaves nothing on the connection: the next transaction on it has no tenant and the default deadlines', async () => {
    const single = open({ poolMax: 1 });
    const [scoped] = await single.withTenantSql({ tenantId: a }, (tx) =>
      tx.query<{ pid: number; n: number; timeout: string }>(
        `SELECT pg_backend_pid() AS pid, (SELECT count(*)::int FROM sessions) AS n,
                current_setting('statement_timeout') AS timeout`,
      ),
    );
    expect(scoped).toMatchObject({ n: 1, timeout: '10s' });
    // withKeyHash sets neither the tenant nor a deadline: whatever it sees was left by the previous transaction.
    const [after] = await single.withKeyHash(
      'no such key',
      (tx) =>
        tx.$queryRaw<{ pid: number; tenant: string | null; n: number; timeout: string; idle: string }[]>`
        SELECT pg_backend_pid() AS pid, current_setting('canopy.tenant_id', true) AS tenant,
               (SELECT count(*)::int FROM sessions) AS n, current_setting('statement_timeout') AS timeout,
               current_setting('idle_in_transaction_session_timeout') AS idle`,
    );
    expect(after).toEqual({ pid: scoped!.pid, tenant: '', n: 0, timeout: '0', idle: '0' });
  });

  it('rolls back everything on an error, thrown or from the database, and the connection serves on', async () => {
    const single = open({ poolMax: 1 });
    const scope = { tenantId: a };
    const insert = (tx: SqlTx, id: string) =>
      tx.query(`INSERT INTO sessions (tenant_id, id, model) VALUES ($1::uuid, $2, 'm')`, [a, id]);

    await expect(
      single.withTenantSql(scope, async (tx) => {
        await insert(tx, 'thrown');
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    // A duplicate key, then a bad uuid, each after a write: mapped, and the write is gone.
    expect(
      await codeOf(
        single.withTenantSql(scope, async (tx) => {
          await insert(tx, 'dup-first');
          await insert(tx, `s-${a}`);
        }),
      ),
    ).toBe('already_exists');
    expect(
      await codeOf(
        single.withTenantSql(scope, async (tx) => {
          await insert(tx, 'bad-uuid');
          await tx.query('SELECT $1::uuid', ['not-a-uuid']);
        }),
      ),
    ).toBe('not_found');
    expect(
      await codeOf(
        single.withTenantSql(scope, (tx) =>
          tx.query(`INSERT INTO runs (tenant_id, session_id, kind) VALUES ($1::uuid, 'ghost', 'prompt')`, [
            a,
          ]),
        ),
      ),
    ).toBe('not_found'); // foreign key

    const [left] = await single.withTenantSql(scope, (tx) =>
      tx.query<{ ids: string[] }>(
        `SELECT ARRAY(SELECT id FROM sessions WHERE id IN ('thrown', 'dup-first', 'bad-uuid')) AS ids`,
      ),
    );
    expect(left?.ids).toEqual([]);
  });

  it('shares one pool with the Prisma road: a pool of one serves both, in turn and concurrently', async () => {
    const single = open({ poolMax: 1 });
    const pid = async () =>
      (
        await single.withTenantSql({ tenantId: a }, (tx) =>
          tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'),
        )
      )[0]!.pid;
    const prismaPid = async () =>
      (
        await single.withTenant(
          { tenantId: a },
          (tx) => tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`,
        )
      )[0]!.pid;
    const first = await pid();
    expect(await prismaPid()).toBe(first);
    expect(await pid()).toBe(first);

    const order: string[] = [];
    await Promise.all([
      single.withTenantSql({ tenantId: a }, async (tx) => {
        await tx.query('SELECT pg_sleep(0.1)');
        order.push('sql');
      }),
      single.withTenant({ tenantId: a }, async (tx) => {
        order.push('prisma');
        return tx.tenant.count();
      }),
      single.withTenantSql({ tenantId: b }, async (tx) => {
        order.push('sql again');
        return tx.query('SELECT 1');
      }),
    ]);
    // The first holds the only connection: the others, whichever road, wait for it and then get it in turn.
    expect(order[0]).toBe('sql');
    expect([...order].sort()).toEqual(['prisma', 'sql', 'sql again']);
    expect(await prismaPid()).toBe(first);
  });

  it('rolls back a transaction that runs past DATABASE_TX_TIMEOUT_MS, statement or idle, and serves on', async () => {
    const quick = open({ poolMax: 1, txTimeoutMs: 300 });
    const scope = { tenantId: a };
    const insert = (tx: SqlTx, id: string) =>
      tx.query(`INSERT INTO sessions (tenant_id, id, model) VALUES ($1::uuid, $2, 'm')`, [a, id]);

    const started = performance.now();
    expect(
      await codeOf(
        quick.withTenantSql(scope, async (tx) => {
          await insert(tx, 'slow-statement');
          await tx.query('SELECT pg_sleep(2)');
        }),
      ),
    ).toBe('unavailable');
    expect(performance.now() - started).toBeLessThan(1_500);

    // Left idle inside the transaction: the server ends it (and its connection).
    expect(
      await codeOf(
        quick.withTenantSql(scope, async (tx) => {
          await insert(tx, 'idle');
          await new Promise((r) => setTimeout(r, 600));
          await tx.query('SELECT 1');
        }),
      ),
    ).toBe('unavailable');

    // Many quick steps past the deadline: refused before the next one.
    expect(
      await codeOf(
        quick.withTenantSql(scope, async (tx) => {
          await insert(tx, 'many-steps');
          for (let i = 0; i < 8; i++) {
            await tx.query('SELECT pg_sleep(0.05)');
            await new Promise((r) => setTimeout(r, 50));
          }
        }),
      ),
    ).toBe('unavailable');

    const [left] = await quick.withTenantSql(scope, (tx) =>
      tx.query<{ ids: string[] }>(
        `SELECT ARRAY(SELECT id FROM sessions WHERE id IN ('slow-statement', 'idle', 'many-steps')) AS ids`,
      ),
    );
    expect(left?.ids).toEqual([]);
  });

  it('waits at most DATABASE_TX_MAX_WAIT_MS for a connection, then answers unavailable', async () => {
    const busy = open({ poolMax: 1, txMaxWaitMs: 150 });
    const holding = busy.withTenantSql({ tenantId: a }, (tx) => tx.query('SELECT pg_sleep(0.5)'));
    const started = performance.now();
    expect(await codeOf(busy.withTenantSql({ tenantId: a }, (tx) => tx.query('SELECT 1')))).toBe(
      'unavailable',
    );
    expect(performance.now() - started).toBeLessThan(450);
    await holding;
    await expect(busy.withTenantSql({ tenantId: a }, (tx) => tx.query('SELECT 1'))).resolves.toHaveLength(1);
  });
});

describe('callSql', () => {
  it('sends one statement in autocommit: its transaction is its own, and nothing it sets outlives it', async () => {
    const single = open({ poolMax: 1 });
    const [first] = await single.callSql<{ pid: number; tenant: string; n: number }>(
      { tenantId: a },
      `SELECT pg_backend_pid() AS pid, set_config('canopy.tenant_id', $1, true) AS tenant,
              (SELECT count(*)::int FROM sessions) AS n`,
      [a],
    );
    expect(first).toEqual({ pid: expect.any(Number) as number, tenant: a, n: 1 });
    const [next] = await single.callSql<{ pid: number; tenant: string; n: number }>(
      { tenantId: a },
      `SELECT pg_backend_pid() AS pid, current_setting('canopy.tenant_id', true) AS tenant,
              (SELECT count(*)::int FROM sessions) AS n`,
      [],
    );
    // The same connection, and the transaction-local tenant is gone: the first statement's transaction ended
    // with it. A statement that declares no tenant sees nothing.
    expect(next).toEqual({ pid: first!.pid, tenant: '', n: 0 });
  });

  it('answers not_found for a tenant id that is no uuid, before touching the database', async () => {
    const nowhere = open({ url: 'postgresql://canopy@127.0.0.1:1/canopy', txMaxWaitMs: 500 });
    expect(await codeOf(nowhere.callSql({ tenantId: 'not-a-uuid' }, 'SELECT 1', []))).toBe('not_found');
    expect(await codeOf(nowhere.callSql({ tenantId: a }, 'SELECT 1', []))).toBe('unavailable');
  });

  it('maps errors like the other roads, and the connection serves on', async () => {
    const single = open({ poolMax: 1 });
    expect(await codeOf(single.callSql({ tenantId: a }, 'SELECT $1::uuid', ['not-a-uuid']))).toBe(
      'not_found',
    );
    expect(await codeOf(single.callSql({ tenantId: a }, 'SELECT canopy_enter(NULL, 1000)', []))).toBe(
      'not a CanopyException: error: canopy: a tenant id is required',
    );
    await expect(single.callSql({ tenantId: a }, 'SELECT 1 AS one', [])).resolves.toEqual([{ one: 1 }]);
  });

  it('prepares each statement once per connection, under a name no other connection of the process uses', async () => {
    const first = open({ poolMax: 1 });
    const second = open({ poolMax: 1 });
    const text = 'SELECT $1::int + 1 AS next';
    for (let i = 0; i < 3; i++) {
      await expect(first.callSql({ tenantId: a }, text, [i])).resolves.toEqual([{ next: i + 1 }]);
    }
    await second.callSql({ tenantId: a }, text, [7]);
    const prepared = `SELECT name, statement, (generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements`;
    const [onFirst] = await first.callSql<{ name: string; statement: string; runs: number }>(
      { tenantId: a },
      `${prepared} WHERE statement = $1`,
      [text],
    );
    const [onSecond] = await second.callSql<{ name: string }>(
      { tenantId: a },
      `${prepared} WHERE statement = $1`,
      [text],
    );
    // Parsed once, run three times on the first connection; named apart on the second.
    expect(onFirst).toEqual({
      name: expect.stringMatching(/^canopy_\d+_c\d+$/) as string,
      statement: text,
      runs: 3,
    });
    expect(onSecond?.name).toMatch(/^canopy_\d+_c\d+$/);
    expect(onSecond?.name).not.toBe(onFirst?.name);
  });
});

describe('callSql pipelined on a shared connection (pipelineCalls, the embedded runtime)', () => {
  const piped = (options: Partial<ConstructorParameters<typeof Database>[0]> = {}) =>
    open({ poolMax: 1, pipelineCalls: true, ...options });

  it('writes up to PIPELINE_DEPTH statements on one connection before the first is answered, each answered with its own rows', async () => {
    const single = piped();
    const first = single.callSql<{ pid: number }>(
      { tenantId: a },
      'SELECT pg_backend_pid() AS pid, pg_sleep(0.3)',
      [],
    );
    const rest = Array.from({ length: 5 }, (_, i) =>
      single.callSql<{ n: number; pid: number }>(
        { tenantId: a },
        'SELECT $1::int AS n, pg_backend_pid() AS pid',
        [i],
        'run',
      ),
    );
    await new Promise((r) => setTimeout(r, 100));
    // Five sent on the one connection while the first sleeps (without pipelining: one, the others queued); the
    // sixth waits for a place (PIPELINE_DEPTH).
    expect(single.poolStats).toMatchObject({ total: 1, pipelined: 5, waiting: 1 });
    const [{ pid } = { pid: -1 }] = await first;
    const answers = (await Promise.all(rest)).map((rows) => rows[0]);
    expect(answers).toEqual([0, 1, 2, 3, 4].map((n) => ({ n, pid })));
    expect(single.poolStats).toMatchObject({ total: 1, idle: 1, pipelined: 0 });
  });

  it('fails a failing statement alone: those around it are answered', async () => {
    const single = piped();
    const [before, failing, after] = [
      single.callSql({ tenantId: a }, 'SELECT 1 AS n, pg_sleep(0.05)', []),
      codeOf(single.callSql({ tenantId: a }, 'SELECT $1::uuid', ['not-a-uuid'])),
      single.callSql({ tenantId: a }, 'SELECT 3 AS n', []),
    ];
    expect(await failing).toBe('not_found');
    await expect(before).resolves.toEqual([{ n: 1, pg_sleep: '' }]);
    await expect(after).resolves.toEqual([{ n: 3 }]);
  });

  it('prepares a statement once when many calls of it go out together on a new connection', async () => {
    const single = piped();
    const text = 'SELECT $1::int * 2 AS twice';
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => single.callSql<{ twice: number }>({ tenantId: a }, text, [i])),
    );
    expect(answers.map((rows) => rows[0]?.twice)).toEqual(Array.from({ length: 12 }, (_, i) => i * 2));
    const [row] = await single.callSql<{ runs: number }>(
      { tenantId: a },
      'SELECT (generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements WHERE statement = $1',
      [text],
    );
    expect(row).toEqual({ runs: 12 });
  });

  it('never runs a statement inside a transaction: a waiting transaction gets the connection once the statements in flight are answered, and later statements wait for it', async () => {
    const single = piped();
    const order: string[] = [];
    const statement = (label: string, sleep: number) =>
      single
        .callSql<{ probe: string }>(
          { tenantId: a },
          `SELECT coalesce(current_setting('canopy.probe', true), '') AS probe, pg_sleep($1::float8)`,
          [sleep],
          'run',
        )
        .then((rows) => order.push(`${label}:${rows[0]?.probe ?? '?'}`));
    const early = [statement('early-1', 0.5), statement('early-2', 0)];
    // Both sent on the shared connection, and the first still running, when the transaction asks for it.
    await eventually(() => expect(single.poolStats.pipelined).toBe(2));
    const transaction = single
      .withTenantSql({ tenantId: a }, async (tx) => {
        await tx.query(`SELECT set_config('canopy.probe', 'in-tx', true)`);
        await new Promise((r) => setTimeout(r, 100));
        await tx.query('SELECT 1');
      })
      .then(() => order.push('transaction'));
    await eventually(() => expect(single.poolStats.waiting).toBeGreaterThan(0)); // the transaction waits
    const late = [statement('late-1', 0), statement('late-2', 0)];
    await Promise.all([...early, transaction, ...late]);
    // The early statements were answered before the transaction began, the late ones after it ended: none ran
    // inside it (none saw its setting), though the transaction waited for the connection while statements came.
    expect(order).toEqual(['early-1:', 'early-2:', 'transaction', 'late-1:', 'late-2:']);
  });

  it('gives the connection to a waiting Prisma transaction the same way', async () => {
    const single = piped();
    const order: string[] = [];
    const statement = (label: string, sleep: number) =>
      single
        .callSql({ tenantId: a }, 'SELECT pg_sleep($1::float8)', [sleep], 'run')
        .then(() => order.push(label));
    const early = statement('early', 0.5);
    await eventually(() => expect(single.poolStats.pipelined).toBe(1));
    const typed = single
      .withTenant({ tenantId: a }, (tx) => tx.$queryRaw`SELECT pg_sleep(0.1)::text`)
      .then(() => order.push('prisma'));
    await eventually(() => expect(single.poolStats.waiting).toBeGreaterThan(0)); // the Prisma transaction waits
    const late = statement('late', 0);
    await Promise.all([early, typed, late]);
    expect(order).toEqual(['early', 'prisma', 'late']);
  });

  it('answers the statements in flight on a connection that dies as unavailable, and serves on with a new one', async () => {
    const single = piped();
    const [{ pid } = { pid: -1 }] = await single.callSql<{ pid: number }>(
      { tenantId: a },
      'SELECT pg_backend_pid() AS pid',
      [],
    );
    const inFlight = [
      codeOf(single.callSql({ tenantId: a }, 'SELECT pg_sleep(2)', [])),
      codeOf(single.callSql({ tenantId: a }, 'SELECT 1', [])),
    ];
    await new Promise((r) => setTimeout(r, 100));
    await db.withAdminSql('test: end the shared connection', (tx) =>
      tx.query('SELECT pg_terminate_backend($1::int)', [pid]),
    );
    expect(await Promise.all(inFlight)).toEqual(['unavailable', 'unavailable']);
    const [next] = await single.callSql<{ pid: number }>(
      { tenantId: a },
      'SELECT pg_backend_pid() AS pid',
      [],
    );
    expect(next?.pid).not.toBe(pid);
  });

  it('answers unavailable when the database cannot be reached, each time (a failed lease is not reused)', async () => {
    const nowhere = piped({ url: 'postgresql://canopy@127.0.0.1:1/canopy', txMaxWaitMs: 500 });
    const together = [1, 2, 3].map(() => codeOf(nowhere.callSql({ tenantId: a }, 'SELECT 1', [])));
    expect(await Promise.all(together)).toEqual(['unavailable', 'unavailable', 'unavailable']);
    expect(await codeOf(nowhere.callSql({ tenantId: a }, 'SELECT 1', [], 'run'))).toBe('unavailable');
    expect(nowhere.poolStats).toMatchObject({ waiting: 0, pipelined: 0 });
  });

  it('times a wait for a place out at DATABASE_TX_MAX_WAIT_MS as unavailable, and the places come back', async () => {
    const single = piped({ txMaxWaitMs: 150 });
    const holding = single.withTenantSql({ tenantId: a }, (tx) => tx.query('SELECT pg_sleep(0.5)'));
    await new Promise((r) => setTimeout(r, 20));
    expect(await codeOf(single.callSql({ tenantId: a }, 'SELECT 1', [], 'run'))).toBe('unavailable');
    await holding;
    await expect(single.callSql({ tenantId: a }, 'SELECT 1 AS one', [])).resolves.toEqual([{ one: 1 }]);
    expect(single.poolStats).toMatchObject({ waiting: 0, pipelined: 0 });
  });
});

describe('connection lanes', () => {
  it('gives a free connection to a waiting request before waiting run statements, and answers all', async () => {
    const pair = open({ poolMax: 2 });
    const order: string[] = [];
    const statement = (label: string, lane: 'request' | 'run', sleep = 0) =>
      pair
        .callSql({ tenantId: a }, `SELECT pg_sleep($1::float8)`, [sleep], lane)
        .then(() => order.push(label));
    // Both connections busy (the second for longer); then five run statements queue, then one request.
    const holders = [statement('hold-1', 'run', 0.2), statement('hold-2', 'run', 0.8)];
    const runs = [1, 2, 3, 4, 5].map((n) => statement(`run-${n}`, 'run'));
    const request = statement('request', 'request');
    expect(pair.poolStats.waitingByLane).toEqual({ request: 1, run: 5 });
    await Promise.all([...holders, ...runs, request]);
    // The first connection freed went to the request, though it came last (first come, first served would have
    // answered it after the five runs); the runs kept their order among themselves.
    expect(order).toEqual(['hold-1', 'request', 'run-1', 'run-2', 'run-3', 'run-4', 'run-5', 'hold-2']);
    expect(pair.poolStats.waitingByLane).toEqual({ request: 0, run: 0 });
  });

  it('times a lane wait out at DATABASE_TX_MAX_WAIT_MS as unavailable, and the permits come back', async () => {
    const single = open({ poolMax: 1, txMaxWaitMs: 150 });
    const holding = single.callSql({ tenantId: a }, 'SELECT pg_sleep(0.5)', [], 'run');
    expect(await codeOf(single.callSql({ tenantId: a }, 'SELECT 1', [], 'run'))).toBe('unavailable');
    expect(await codeOf(single.callSql({ tenantId: a }, 'SELECT 1', []))).toBe('unavailable');
    await holding;
    // A failed statement and a broken connection give their permit back too.
    expect(await codeOf(single.callSql({ tenantId: a }, 'SELECT $1::uuid', ['x'], 'run'))).toBe('not_found');
    await expect(single.callSql({ tenantId: a }, 'SELECT 1 AS one', [])).resolves.toEqual([{ one: 1 }]);
    await expect(single.withTenantSql({ tenantId: a }, (tx) => tx.query('SELECT 1 AS one'))).resolves.toEqual(
      [{ one: 1 }],
    );
    expect(single.poolStats).toMatchObject({ waiting: 0, waitingByLane: { request: 0, run: 0 } });
  });
});

describe('withAdminSql', () => {
  it('spans tenants, and needs a reason', async () => {
    const [seen] = await db.withAdminSql('test: cross-tenant read', (tx) =>
      tx.query<{ ids: string[] }>(
        'SELECT ARRAY(SELECT id::text FROM tenants WHERE id = ANY($1::uuid[])) AS ids',
        [[a, b]],
      ),
    );
    expect([...seen!.ids].sort()).toEqual([a, b].sort());
    await expect(db.withAdminSql('', () => Promise.resolve())).rejects.toThrow(/reason/);
  });
});

describe('an unreachable database', () => {
  it('answers unavailable on both roads and on ping', async () => {
    const nowhere = open({ url: 'postgresql://canopy@127.0.0.1:1/canopy', txMaxWaitMs: 1_000 });
    expect(await codeOf(nowhere.ping())).toBe('unavailable');
    expect(await codeOf(nowhere.withTenantSql({ tenantId: a }, (tx) => tx.query('SELECT 1')))).toBe(
      'unavailable',
    );
    expect(await codeOf(nowhere.withAdminSql('test', (tx) => tx.query('SELECT 1')))).toBe('unavailable');
    expect(await codeOf(nowhere.withTenant({ tenantId: a }, (tx) => tx.tenant.count()))).toBe('unavailable');
  });

  it('closes its pool once, however often disconnect is called', async () => {
    const closing = open();
    await closing.ping();
    await closing.disconnect();
    await expect(closing.disconnect()).resolves.toBeUndefined();
    await expect(closing.withTenantSql({ tenantId: a }, (tx) => tx.query('SELECT 1'))).rejects.toBeDefined();
  });
});
