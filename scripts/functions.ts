// `npm run functions`: writes prisma/functions/<name>.sql, the definition of every canopy_* SQL function as the
// migrated database holds it. Migrates a scratch database on the test Postgres (CANOPY_TEST_PG_ADMIN_URL, default
// 127.0.0.1:5432, as `npm test` uses), reads pg_get_functiondef, writes the files and removes those of dropped
// functions.
// `npm run functions -- --migration <name>`: first writes prisma/migrations/<UTC timestamp>_<name>/migration.sql
// from the files that differ from what the existing migrations build (each file's description and definition), then
// rewrites the files as above from a database migrated with it.

import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase, prepareTemplate } from '../libs/testing/src/test-postgres';
import {
  databaseFunctions,
  FUNCTIONS_DIR,
  functionFileName,
  migrationDefinitions,
  migrationText,
  MIGRATIONS_DIR,
  normaliseDefinition,
  renderFunctionFile,
} from './lib/sql-functions';

/** The files whose function differs from the database's (or that the database lacks), as a new migration. */
async function writeMigration(name: string): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`a migration name is lowercase words joined by _: ${name}`);
  await prepareTemplate();
  const database = await createTestDatabase();
  const client = new Client({ connectionString: database.url });
  try {
    await client.connect();
    const current = new Map((await databaseFunctions(client)).map((fn) => [fn.name, fn.definition]));
    const changed: string[] = [];
    for (const file of readdirSync(FUNCTIONS_DIR)
      .filter((f) => f.endsWith('.sql'))
      .sort()) {
      const text = readFileSync(join(FUNCTIONS_DIR, file), 'utf8');
      const now = current.get(file.slice(0, -'.sql'.length));
      if (now === undefined || normaliseDefinition(text) !== normaliseDefinition(now))
        changed.push(migrationText(text));
    }
    if (!changed.length)
      throw new Error('no function file differs from what the migrations build: nothing to write');
    const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
    const dir = join(MIGRATIONS_DIR, `${stamp}_${name}`);
    if (existsSync(dir)) throw new Error(`${dir} exists already`);
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'migration.sql'),
      `-- ${name.replace(/_/g, ' ')}: the functions as prisma/functions holds them.\n\n${changed.join('\n\n')}\n`,
    );
    process.stdout.write(
      `wrote ${dir}/migration.sql (${changed.length} function${changed.length === 1 ? '' : 's'})\n`,
    );
  } finally {
    await client.end();
    await database.drop();
  }
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--migration');
  if (at >= 0) await writeMigration(process.argv[at + 1] ?? '');
  await prepareTemplate();
  const database = await createTestDatabase();
  const client = new Client({ connectionString: database.url });
  try {
    await client.connect();
    const functions = await databaseFunctions(client);
    const definitions = migrationDefinitions();
    mkdirSync(FUNCTIONS_DIR, { recursive: true });
    const wanted = new Set<string>();
    for (const fn of functions) {
      const file = functionFileName(fn.name);
      wanted.add(file);
      const text = renderFunctionFile(fn, definitions.get(fn.name));
      const path = join(FUNCTIONS_DIR, file);
      let current: string | null = null;
      try {
        current = readFileSync(path, 'utf8');
      } catch {
        current = null;
      }
      if (current !== text) {
        writeFileSync(path, text);
        process.stdout.write(`wrote prisma/functions/${file}\n`);
      }
    }
    for (const file of readdirSync(FUNCTIONS_DIR)) {
      if (file.endsWith('.sql') && !wanted.has(file)) {
        rmSync(join(FUNCTIONS_DIR, file));
        process.stdout.write(`removed prisma/functions/${file} (no such function any more)\n`);
      }
    }
    process.stdout.write(`${functions.length} functions in prisma/functions\n`);
  } finally {
    await client.end();
    await database.drop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `functions failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
