// Test databases on the machine's real Postgres. A template database is migrated once per run (again only when
// the migrations change); every test file then gets its own copy (CREATE DATABASE ... TEMPLATE, ~100 ms), owned
// by a role that is neither superuser nor BYPASSRLS, so row-level security is enforced in tests as in production.

import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
// Relative, not @canopy/store: jest's global setup runs outside its module mapper.
import { applyMigrations } from '../../store/src/migrator';
// Relative, not @canopy/common: jest's global setup runs outside its module mapper.
import { isProcessAlive } from '../../common/src/process';

export const TEST_ROLE = 'canopy_test';
const TEMPLATE_PREFIX = 'canopy_tpl_';
const DB_PREFIX = 'canopy_test_';
const MIGRATIONS_DIR = resolve(__dirname, '../../../prisma/migrations');

/** A superuser connection to the machine's Postgres (trust auth on 127.0.0.1 here; override for elsewhere). */
export function adminUrl(): string {
  return process.env.CANOPY_TEST_PG_ADMIN_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
}

/** URL of a database as the test role. */
export function roleUrl(database: string): string {
  const u = new URL(adminUrl());
  u.username = TEST_ROLE;
  u.password = process.env.CANOPY_TEST_PG_ROLE_PASSWORD ?? '';
  u.pathname = `/${database}`;
  return u.toString();
}

export function migrationsHash(): string {
  const h = createHash('sha256');
  for (const dir of readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()) {
    h.update(dir).update(readFileSync(join(MIGRATIONS_DIR, dir, 'migration.sql')));
  }
  return h.digest('hex').slice(0, 32);
}

async function withAdmin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: adminUrl() });
  try {
    await client.connect();
  } catch (err) {
    throw new Error(
      `cannot reach the test Postgres at ${new URL(adminUrl()).host} (set CANOPY_TEST_PG_ADMIN_URL): ${(err as Error).message}`,
      { cause: err },
    );
  }
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * The template database of the current migrations. Named by their hash, so test runs of checkouts whose
 * migrations differ (several worktrees on one machine) never rebuild each other's template.
 */
export function templateDb(hash = migrationsHash()): string {
  return `${TEMPLATE_PREFIX}${hash.slice(0, 16)}`;
}

/** Templates not used for this long (by any migration set) are dropped by the next run. */
const TEMPLATE_KEEP_MS = 3 * 24 * 3_600_000;

/** Ensures the test role and an up-to-date migrated template; drops databases left by earlier runs. */
export async function prepareTemplate(): Promise<void> {
  const hash = migrationsHash();
  const template = templateDb(hash);
  const exists = await withAdmin(async (c) => {
    const role = await c.query<{ rolsuper: boolean; rolbypassrls: boolean }>(
      'SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = $1',
      [TEST_ROLE],
    );
    if (role.rowCount === 0) {
      await c.query(`CREATE ROLE ${TEST_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS CREATEDB`);
    } else if (role.rows[0]!.rolsuper || role.rows[0]!.rolbypassrls) {
      await c.query(`ALTER ROLE ${TEST_ROLE} NOSUPERUSER NOBYPASSRLS`);
    }
    const leftovers = await c.query<{ datname: string; comment: string | null }>(
      `SELECT datname, shobj_description(oid, 'pg_database') AS comment FROM pg_database d
        WHERE (datname LIKE '${DB_PREFIX}%' OR datname LIKE '${TEMPLATE_PREFIX}%') AND datname <> $1
          AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datname = d.datname)`,
      [template],
    );
    for (const { datname, comment } of leftovers.rows) {
      if (datname.startsWith(TEMPLATE_PREFIX)) {
        // Another checkout's template (or one being built): dropped only once unused for days.
        const usedAt = Number(/used:(\d+)/.exec(comment ?? '')?.[1]);
        if (!Number.isFinite(usedAt) || Date.now() - usedAt < TEMPLATE_KEEP_MS) continue;
      } else {
        // Names carry the pid of the test process that made them: a live process's database (another jest run
        // starting at the same moment) is not a leftover.
        const pid = Number(/^canopy_test_(\d+)_/.exec(datname)?.[1]);
        if (Number.isInteger(pid) && isProcessAlive(pid)) continue;
      }
      await c.query(`DROP DATABASE IF EXISTS "${datname}"`).catch(() => undefined);
    }
    const current = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [template]);
    if (current.rowCount === 0) return false;
    await markUsed(c, template, hash);
    return true;
  });
  if (exists) return;
  // Built under a name of its own, then renamed: a concurrent run never copies a half-migrated template.
  const building = `${template}_b${process.pid}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${building} OWNER ${TEST_ROLE}`));
  try {
    await applyMigrations({ url: roleUrl(building), migrationsDir: MIGRATIONS_DIR });
    await withAdmin(async (c) => {
      try {
        await c.query(`ALTER DATABASE ${building} RENAME TO ${template}`);
        await markUsed(c, template, hash);
      } catch (err) {
        // Another run built the same template first: use theirs.
        if ((err as { code?: string }).code !== '42P04') throw err;
        await c.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      }
    });
  } catch (err) {
    await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`)).catch(
      () => undefined,
    );
    throw err;
  }
}

async function markUsed(c: Client, template: string, hash: string): Promise<void> {
  await c.query(`COMMENT ON DATABASE ${template} IS 'migrations:${hash} used:${Date.now()}'`);
}

export interface TestDatabase {
  readonly name: string;
  /** URL as the test role (no superuser, RLS enforced). */
  readonly url: string;
  drop(): Promise<void>;
}

/** A fresh, migrated database of its own for one test file. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `${DB_PREFIX}${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${templateDb()} OWNER ${TEST_ROLE}`));
  return {
    name,
    url: roleUrl(name),
    drop: () =>
      withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}
