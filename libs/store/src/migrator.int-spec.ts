// Migrating a database whose history predates the baseline, on the real Postgres: one built by every migration
// before the baseline is taken over (the baseline recorded in their place, the data untouched, the migrations after
// the baseline applied); one stopped part way through that chain, or migrated by a version with migrations this one
// lacks, is refused with what to do, and nothing changes.

import { randomBytes, randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { adminUrl, roleUrl, TEST_ROLE, type TestDatabase } from '@canopy/testing';
import { startFailureText } from '@canopy/common';
import { applyMigrations, BASELINE_MIGRATION, BEFORE_BASELINE, MigrationHistoryRefusal } from './migrator';

const MIGRATIONS_DIR = join(__dirname, '../../../prisma/migrations');
/** The migrations after the baseline: a database taken over applies them next. */
const AFTER_BASELINE = readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name > BASELINE_MIGRATION)
  .map((d) => d.name)
  .sort();

let db: TestDatabase;
let client: Client;
let baselineOnly: string;

beforeAll(() => {
  baselineOnly = mkdtempSync(join(tmpdir(), 'canopy-baseline-'));
  cpSync(join(MIGRATIONS_DIR, BASELINE_MIGRATION), join(baselineOnly, BASELINE_MIGRATION), {
    recursive: true,
  });
  cpSync(join(MIGRATIONS_DIR, 'migration_lock.toml'), join(baselineOnly, 'migration_lock.toml'));
});

afterAll(() => rmSync(baselineOnly, { recursive: true, force: true }));

/**
 * A database with the baseline's schema and nothing after it: what the migrations before the baseline built (the
 * test template has every migration, later ones included).
 */
async function baselineDatabase(): Promise<TestDatabase> {
  const name = `canopy_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = async (statement: string) => {
    const c = new Client({ connectionString: adminUrl() });
    await c.connect();
    try {
      await c.query(statement);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${name} OWNER ${TEST_ROLE}`);
  await applyMigrations({ url: roleUrl(name), migrationsDir: baselineOnly });
  return { name, url: roleUrl(name), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

beforeEach(async () => {
  db = await baselineDatabase();
  client = new Client({ connectionString: db.url });
  await client.connect();
});

afterEach(async () => {
  await client?.end();
  await db?.drop();
});

/** Rewrites the history as the given migrations applied, in order (the schema is the baseline's either way). */
async function recordHistory(names: readonly string[]): Promise<void> {
  await client.query('DELETE FROM _prisma_migrations');
  for (const name of names) {
    await client.query(
      `INSERT INTO _prisma_migrations (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
       VALUES ($1, 'checksum-of-' || $2, $2, now(), now(), 1)`,
      [randomUUID(), name],
    );
  }
}

async function history(): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(
    'SELECT migration_name AS name FROM _prisma_migrations ORDER BY migration_name',
  );
  return rows.map((r) => r.name);
}

/** A tenant row, to see that taking a database over keeps its data. */
async function addTenant(): Promise<string> {
  const id = randomUUID();
  await client.query(`SELECT set_config('canopy.admin', 'on', false)`);
  await client.query('INSERT INTO tenants (id, name) VALUES ($1, $2)', [id, `migrated-${id.slice(0, 8)}`]);
  return id;
}

describe('a database migrated before the baseline', () => {
  it('is taken over when it applied every earlier migration: the baseline recorded in their place', async () => {
    await recordHistory(BEFORE_BASELINE);
    const tenant = await addTenant();
    const logs: string[] = [];

    const result = await applyMigrations({
      url: db.url,
      migrationsDir: MIGRATIONS_DIR,
      log: (m) => logs.push(m),
    });

    // The baseline recorded in place of the earlier chain, then the migrations after it applied.
    expect(result).toEqual({ applied: AFTER_BASELINE, adopted: [...BEFORE_BASELINE] });
    expect(await history()).toEqual([BASELINE_MIGRATION, ...AFTER_BASELINE]);
    expect(logs.some((m) => m.includes(`before ${BASELINE_MIGRATION}`))).toBe(true);
    const { rows } = await client.query('SELECT id FROM tenants WHERE id = $1', [tenant]);
    expect(rows).toHaveLength(1);
    // A second start finds nothing to do.
    expect(await applyMigrations({ url: db.url, migrationsDir: MIGRATIONS_DIR })).toEqual({
      applied: [],
      adopted: [],
    });
  });

  it('finishes a takeover stopped between recording the baseline and removing the earlier records', async () => {
    await recordHistory([...BEFORE_BASELINE, BASELINE_MIGRATION]);
    const result = await applyMigrations({ url: db.url, migrationsDir: MIGRATIONS_DIR });
    expect(result.adopted).toHaveLength(BEFORE_BASELINE.length);
    expect(await history()).toEqual([BASELINE_MIGRATION, ...AFTER_BASELINE]);
  });

  it('is refused, unchanged, when the earlier chain stopped part way', async () => {
    const partial = BEFORE_BASELINE.slice(0, -1);
    await recordHistory(partial);
    const refusal = await applyMigrations({ url: db.url, migrationsDir: MIGRATIONS_DIR }).catch(
      (err: unknown) => err,
    );
    expect(refusal).toBeInstanceOf(MigrationHistoryRefusal);
    expect((refusal as Error).message).toMatch(/earlier version of Canopy, not to the end of its migrations/);
    expect((refusal as Error).message).toMatch(/GET \/v1\/export and POST \/v1\/import/);
    // The process prints it as it is, without a stack.
    expect(startFailureText(refusal)).toBe((refusal as Error).message);
    expect(await history()).toEqual([...partial].sort());
  });

  it('is refused, unchanged, when another version applied migrations this one does not have', async () => {
    await recordHistory([BASELINE_MIGRATION, '20990101000000_from_the_future']);
    const refusal = await applyMigrations({ url: db.url, migrationsDir: MIGRATIONS_DIR }).catch(
      (err: unknown) => err,
    );
    expect(refusal).toBeInstanceOf(MigrationHistoryRefusal);
    expect((refusal as Error).message).toMatch(
      /another version of Canopy \(it records 20990101000000_from_the_future/,
    );
    expect(await history()).toEqual([BASELINE_MIGRATION, '20990101000000_from_the_future']);
  });
});
