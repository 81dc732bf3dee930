// The embedded database heals: its thread killed under a stream of commits, or wedged (PGlite spins forever once
// an idle-in-transaction timeout fires in it), is restarted on the same data directory and port by the
// supervisor; every acknowledged commit is there after; the Database answers 503 at once meanwhile; a data
// directory that no longer holds a database is never replaced by an empty one, and a database that cannot come
// back marks the process unhealthy after the bound. Also: the service's own transactions left idle past their
// deadline do not wedge the embedded database (no server-side timeouts are sent to it).

import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { CanopyException, loadConfig } from '@canopy/common';
import { eventually } from '@canopy/testing';
import { Database } from './database';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres';
import { EmbeddedDatabaseSupervisor } from './embedded-supervisor';
import { openDatabase } from './store.module';

let dataDir: string;
let embedded: EmbeddedPostgres;
let db: Database;
let supervisor: EmbeddedDatabaseSupervisor;
const logged: string[] = [];
const tenantId = randomUUID();

const LIVENESS_MS = 1_500;
const RECOVERY_MS = 4_000;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'canopy-heals-'));
  embedded = await startEmbeddedPostgres(dataDir);
  // As StoreModule opens it on the embedded database.
  db = new Database({
    url: embedded.url,
    poolMax: 1,
    pipelineCalls: true,
    serverTimeouts: false,
    txMaxWaitMs: 5_000,
    txTimeoutMs: 5_000,
  });
  await db.withAdminSql('test table', (tx) =>
    tx.query('CREATE TABLE IF NOT EXISTS acked (n int PRIMARY KEY)'),
  );
  supervisor = new EmbeddedDatabaseSupervisor(embedded, db, {
    livenessMs: LIVENESS_MS,
    recoveryMs: RECOVERY_MS,
    log: { info: (m) => logged.push(m), warn: (m) => logged.push(m), error: (m) => logged.push(m) },
  });
  supervisor.start();
}, 180_000);

afterAll(async () => {
  await supervisor?.stop();
  await db?.disconnect();
  await embedded?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Commits one row per statement (autocommit) until stopped; answers the rows whose commit was acknowledged. */
function commitStream(from: number): { stop(): Promise<{ acked: number[]; failures: unknown[] }> } {
  const acked: number[] = [];
  const failures: unknown[] = [];
  let stopped = false;
  const loop = (async () => {
    for (let n = from; !stopped; n++) {
      try {
        await db.callSql({ tenantId }, 'INSERT INTO acked (n) VALUES ($1)', [n]);
        acked.push(n);
      } catch (err) {
        failures.push(err);
        await sleep(50);
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { acked, failures };
    },
  };
}

async function rowsPresent(ns: number[]): Promise<Set<number>> {
  const rows = await db.withAdminSql('test read', (tx) =>
    tx.query<{ n: number }>('SELECT n FROM acked WHERE n = ANY($1::int[])', [ns]),
  );
  return new Set(rows.map((r) => r.n));
}

describe('the embedded database supervisor', () => {
  it('restarts a killed thread on the same port, with every acknowledged commit', async () => {
    const stream = commitStream(1);
    await eventually(async () => expect((await rowsPresent([20])).size).toBe(1), { timeoutMs: 30_000 });
    await embedded.kill();
    // Down: the Database answers 503 at once, without waiting for a connection.
    await eventually(() => expect(supervisor.state).toBe('restarting'), { timeoutMs: 2_000 });
    await expect(db.ping()).rejects.toMatchObject({ code: 'unavailable' });
    await eventually(() => expect(supervisor.state).toBe('up'), { timeoutMs: 60_000, intervalMs: 100 });
    const { acked, failures } = await stream.stop();
    expect(supervisor.restarts).toBe(1);
    expect(failures.length).toBeGreaterThan(0);
    // Every failure was a 503, none anything else.
    expect(failures.filter((e) => !(e instanceof CanopyException && e.code === 'unavailable'))).toEqual([]);
    const present = await rowsPresent(acked);
    expect(acked.filter((n) => !present.has(n))).toEqual([]);
    expect(embedded.url).toMatch(/^postgresql:\/\/canopy@127\.0\.0\.1:\d+\/postgres$/);
    expect(logged.some((m) => /thread exited .*restarting it/.test(m))).toBe(true);
    expect(logged.some((m) => /serves again/.test(m))).toBe(true);
  }, 120_000);

  it('restarts a wedged thread (an idle-in-transaction timeout fired in PGlite) once it stays silent', async () => {
    const before = supervisor.restarts;
    const stream = commitStream(100_000);
    // What a transaction of the service left idle past its deadline did, before none was sent to PGlite.
    const wedger = new Client({ connectionString: embedded.url });
    wedger.on('error', () => undefined);
    await wedger.connect();
    await wedger.query("BEGIN; SELECT set_config('idle_in_transaction_session_timeout', '100', true)");
    await sleep(400);
    void wedger.query('SELECT 1').catch(() => undefined); // never answered: the thread spins from here on
    await eventually(() => expect(supervisor.state).toBe('restarting'), { timeoutMs: LIVENESS_MS * 4 });
    await eventually(() => expect(supervisor.state).toBe('up'), { timeoutMs: 60_000, intervalMs: 100 });
    void wedger.end().catch(() => undefined);
    const { acked } = await stream.stop();
    expect(supervisor.restarts).toBe(before + 1);
    const present = await rowsPresent(acked);
    expect(acked.filter((n) => !present.has(n))).toEqual([]);
    expect(logged.some((m) => /did not answer for \d+ ms: restarting it/.test(m))).toBe(true);
    await expect(db.ping()).resolves.toBeUndefined();
  }, 120_000);

  it('never starts an empty database in place of a missing one; unhealthy past the bound; back when it can', async () => {
    const pgVersion = join(dataDir, 'pgdata', 'PG_VERSION');
    renameSync(pgVersion, `${pgVersion}.away`);
    try {
      await embedded.kill();
      await eventually(() => expect(supervisor.state).toBe('restarting'), { timeoutMs: 2_000 });
      await eventually(() => expect(supervisor.healthy).toBe(false), {
        timeoutMs: RECOVERY_MS + 5_000,
        intervalMs: 100,
      });
      expect(supervisor.state).toBe('failed');
      expect(logged.some((m) => /PG_VERSION is missing/.test(m))).toBe(true);
      expect(logged.some((m) => /not back 4000 ms after it went down/.test(m))).toBe(true);
      await expect(db.ping()).rejects.toMatchObject({ code: 'unavailable' });
    } finally {
      renameSync(`${pgVersion}.away`, pgVersion);
    }
    await eventually(() => expect(supervisor.state).toBe('up'), { timeoutMs: 60_000, intervalMs: 100 });
    expect(supervisor.healthy).toBe(true);
    expect((await rowsPresent([1, 20])).size).toBe(2);
  }, 120_000);
});

describe('the embedded database opened by the store', () => {
  it('is not wedged by a transaction of the service left idle past its deadline', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'canopy-idle-'));
    const config = loadConfig({
      NODE_ENV: 'test',
      CANOPY_DATA_DIR: dir,
      DATABASE_TX_TIMEOUT_MS: '300',
      DATABASE_UPKEEP_INTERVAL_MS: '0',
    });
    const quiet = () => undefined;
    const logger = { log: quiet, debug: quiet, warn: quiet, error: quiet } as unknown as Logger;
    const handle = await openDatabase(config, logger);
    let settled = 'not yet';
    try {
      const idle = handle.database.withTenantSql({ tenantId }, async (tx) => {
        await tx.query('SELECT 1');
        await sleep(900); // idle in the transaction, three times its deadline
        return tx.query('SELECT 2');
      });
      // Past its deadline it fails, and its rollback is answered (bounded: a wedged database never answers).
      settled = await Promise.race([
        idle.then(
          () => 'committed',
          (err: unknown) => (err as { code?: string }).code ?? String(err),
        ),
        sleep(10_000).then(() => 'silent'),
      ]);
      expect(settled).toBe('unavailable');
      // The database still answers (bounded: a wedged one never would).
      const answered = await Promise.race([
        handle.database.ping().then(() => 'answered'),
        sleep(10_000).then(() => 'silent'),
      ]);
      expect(answered).toBe('answered');
    } finally {
      // A wedged thread holds its connections forever (the pool would never end): ended first.
      if (settled !== 'unavailable') await handle.embedded?.kill();
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
