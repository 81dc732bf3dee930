// callSql's pipelined road on the embedded database itself (PGlite behind pglite-socket, one connection): the
// statements written back to back are answered in order, each with its own rows or its own error, and none runs
// inside a transaction that holds the connection. database.int-spec.ts covers the road's rules on Postgres.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { CanopyException } from '@canopy/common';
import { Database } from './database';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres';

let dataDir: string;
let embedded: EmbeddedPostgres;
let db: Database;
const tenantId = randomUUID();

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'canopy-pipeline-'));
  embedded = await startEmbeddedPostgres(dataDir);
  // As StoreModule opens it on the embedded database.
  db = new Database({
    url: embedded.url,
    poolMax: 1,
    pipelineCalls: true,
    txMaxWaitMs: 10_000,
    txTimeoutMs: 10_000,
  });
}, 120_000);

afterAll(async () => {
  await db?.disconnect();
  await embedded?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const outcome = (p: Promise<Array<Record<string, unknown>>>) =>
  p.then(
    (rows) => rows[0],
    (e: unknown) =>
      e instanceof CanopyException ? e.code : `error: ${e instanceof Error ? e.message : String(e)}`,
  );

describe('callSql pipelined on the embedded database', () => {
  it('answers statements written back to back in order, a failing one alone', async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        outcome(
          db.callSql(
            { tenantId },
            // Every fifth divides by zero; the others answer their own number.
            'SELECT $1::int AS n, 10 / $2::int AS q',
            [i, i % 5 === 4 ? 0 : 1],
            i % 2 === 0 ? 'run' : 'request',
          ),
        ),
      ),
    );
    expect(answers).toEqual(
      Array.from({ length: 40 }, (_, i) => (i % 5 === 4 ? 'error: division by zero' : { n: i, q: 10 })),
    );
    expect(db.poolStats).toMatchObject({ total: 1, pipelined: 0, waiting: 0 });
  });

  it('never runs a statement inside a transaction holding the connection', async () => {
    const seen: string[] = [];
    const statements = Array.from({ length: 30 }, () =>
      db
        .callSql<{ probe: string }>(
          { tenantId },
          `SELECT coalesce(current_setting('canopy.probe', true), '') AS probe`,
          [],
          'run',
        )
        .then((rows) => seen.push(rows[0]?.probe ?? '?')),
    );
    const transactions = Array.from({ length: 5 }, (_, i) =>
      db.withTenantSql({ tenantId }, async (tx) => {
        await tx.query(`SELECT set_config('canopy.probe', $1, true)`, [`tx-${i}`]);
        await new Promise((r) => setTimeout(r, 5));
        const [row] = await tx.query<{ probe: string }>(`SELECT current_setting('canopy.probe') AS probe`);
        return row?.probe;
      }),
    );
    // Each transaction sees its own setting; no statement sees any.
    expect(await Promise.all(transactions)).toEqual(['tx-0', 'tx-1', 'tx-2', 'tx-3', 'tx-4']);
    await Promise.all(statements);
    expect(seen).toEqual(Array.from({ length: 30 }, () => ''));
  });
});
