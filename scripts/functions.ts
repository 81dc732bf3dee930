// `npm run functions`: writes prisma/functions/<name>.sql, the current definition of every canopy_* SQL function
// as the migrated database holds it (migrations redefine them; these files show the result in one place).
// Migrates a scratch database on the test Postgres (CANOPY_TEST_PG_ADMIN_URL, default 127.0.0.1:5432, as
// `npm test` uses), reads pg_get_functiondef, writes the files and removes those of dropped functions.

import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase, prepareTemplate } from '../libs/testing/src/test-postgres';
import {
  databaseFunctions,
  FUNCTIONS_DIR,
  functionFileName,
  migrationDefinitions,
  renderFunctionFile,
} from './lib/sql-functions';

async function main(): Promise<void> {
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
