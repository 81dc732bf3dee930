// prisma/functions/<name>.sql holds the current definition of every canopy_* SQL function (README there): each
// file matches pg_get_functiondef of the migrated database, and no function goes without its file.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '@canopy/testing';
import {
  databaseFunctions,
  FUNCTIONS_DIR,
  functionFileName,
  normaliseDefinition,
  type SqlFunction,
} from '../../../scripts/lib/sql-functions';

const FIX = 'run `npm run functions` after the migration, and commit prisma/functions (see its README)';

let testDb: TestDatabase;
let client: Client;
let functions: SqlFunction[];

beforeAll(async () => {
  testDb = await createTestDatabase();
  client = new Client({ connectionString: testDb.url });
  await client.connect();
  functions = await databaseFunctions(client);
});

afterAll(async () => {
  await client?.end();
  await testDb?.drop();
});

describe('prisma/functions', () => {
  it('finds the hot-path functions in the migrated database', () => {
    expect(functions.map((f) => f.name)).toEqual(
      expect.arrayContaining(['canopy_enter', 'canopy_start_run', 'canopy_load_run', 'canopy_commit']),
    );
  });

  it('has a file for every canopy_* function of the database, and none for a function it lacks', () => {
    const files = readdirSync(FUNCTIONS_DIR)
      .filter((f) => f.endsWith('.sql'))
      .sort();
    const expected = functions.map((f) => functionFileName(f.name)).sort();
    const missing = expected.filter((f) => !files.includes(f));
    const extra = files.filter((f) => !expected.includes(f));
    if (missing.length || extra.length) {
      throw new Error(
        `prisma/functions is out of date (missing: ${missing.join(', ') || 'none'}; ` +
          `no such function: ${extra.join(', ') || 'none'}): ${FIX}`,
      );
    }
  });

  it('holds each function as the migrations define it now', () => {
    const stale: string[] = [];
    for (const fn of functions) {
      let text: string;
      try {
        text = readFileSync(join(FUNCTIONS_DIR, functionFileName(fn.name)), 'utf8');
      } catch {
        continue; // reported by the test above
      }
      if (normaliseDefinition(text) !== normaliseDefinition(fn.definition)) stale.push(fn.name);
    }
    if (stale.length) {
      throw new Error(`prisma/functions differs from the migrated database for ${stale.join(', ')}: ${FIX}`);
    }
  });

  it('compares definitions ignoring the header and whitespace, and nothing else', () => {
    const def =
      'CREATE OR REPLACE FUNCTION public.f()\n RETURNS integer\nAS $function$\n  SELECT 1 -- one\n$function$';
    expect(normaliseDefinition(`-- header\n--\n${def.replace(/\n/g, '\n\n    ')};\n`)).toBe(
      normaliseDefinition(def),
    );
    expect(normaliseDefinition(def.replace('SELECT 1', 'SELECT 2'))).not.toBe(normaliseDefinition(def));
    expect(normaliseDefinition(def.replace('-- one', '-- two'))).not.toBe(normaliseDefinition(def));
  });
});
