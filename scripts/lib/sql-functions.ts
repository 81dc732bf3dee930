// The SQL functions of the schema (canopy_*), one file each in prisma/functions/<name>.sql: their source. A file is
// what the migrated database holds (pg_get_functiondef) under a header naming the migration that defined it last
// and describing it. A migration that changes functions is made from the files (`npm run functions --
// --migration <name>`), and the files are rewritten from the database that migration builds. Used by
// scripts/functions.ts and by libs/store/src/functions.int-spec.ts (which checks the files against the database).

import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Client } from 'pg';

export const ROOT = resolve(__dirname, '../..');
export const FUNCTIONS_DIR = join(ROOT, 'prisma/functions');
export const MIGRATIONS_DIR = join(ROOT, 'prisma/migrations');

export interface SqlFunction {
  name: string;
  /** The argument list that identifies it (`p_tenant uuid, p_timeout_ms integer`). */
  identity: string;
  /** `pg_get_functiondef`: CREATE OR REPLACE FUNCTION ... AS $function$ ... $function$ */
  definition: string;
}

/** Every canopy_* function of the public schema, by name (overloads are refused: one file per name). */
export async function databaseFunctions(client: Client): Promise<SqlFunction[]> {
  const { rows } = await client.query<SqlFunction>(
    `SELECT p.proname AS name, pg_get_function_identity_arguments(p.oid) AS identity,
            pg_get_functiondef(p.oid) AS definition
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'public' AND p.proname LIKE 'canopy\\_%'
      ORDER BY p.proname, identity`,
  );
  const seen = new Set<string>();
  for (const { name } of rows) {
    if (seen.has(name)) {
      throw new Error(`${name} has several overloads: drop the old signature in the migration that adds one`);
    }
    seen.add(name);
  }
  return rows;
}

/**
 * What a comparison looks at: the definition without the file's header comment and final `;`, every run of
 * whitespace as one space (indentation and line breaks do not count; everything else, comments inside the body
 * included, does).
 */
export function normaliseDefinition(sql: string): string {
  const lines = sql.replace(/\r\n/g, '\n').split('\n');
  let start = 0;
  while (start < lines.length && (lines[start]!.trim() === '' || lines[start]!.trim().startsWith('--')))
    start++;
  return lines.slice(start).join('\n').trim().replace(/;\s*$/, '').replace(/\s+/g, ' ').trim();
}

interface Definition {
  migration: string;
  /** The comment block right above the CREATE statement, without its `-- `. */
  comment: string[];
}

/**
 * Each CREATE FUNCTION of a canopy_* function across the migrations, oldest first, and each ALTER FUNCTION (a
 * setting attached to it: part of its definition too, but no description of it, so its comment is not taken).
 */
export function migrationDefinitions(dir = MIGRATIONS_DIR): Map<string, Definition[]> {
  const found = new Map<string, Definition[]>();
  const migrations = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  for (const migration of migrations) {
    const lines = readFileSync(join(dir, migration, 'migration.sql'), 'utf8').split('\n');
    lines.forEach((line, i) => {
      const m =
        /^\s*(?:CREATE\s+(?:OR\s+REPLACE\s+)?|(?<alter>ALTER\s+))FUNCTION\s+"?(?:public\.)?"?(canopy_\w+)"?\s*\(/i.exec(
          line,
        );
      if (!m) return;
      const comment: string[] = [];
      if (!m.groups?.alter) {
        for (let j = i - 1; j >= 0 && /^\s*--/.test(lines[j]!); j--) {
          comment.unshift(lines[j]!.replace(/^\s*--\s?/, ''));
        }
      }
      const list = found.get(m[2]!) ?? [];
      list.push({ migration, comment });
      found.set(m[2]!, list);
    });
  }
  return found;
}

/** The file prisma/functions/<name>.sql for a function as the database holds it. */
export function renderFunctionFile(fn: SqlFunction, definitions: Definition[] = []): string {
  const latest = definitions[definitions.length - 1];
  const described = [...definitions].reverse().find((d) => d.comment.length > 0);
  const header = [
    `${fn.name}(${fn.identity})`,
    '',
    latest
      ? `Defined last by prisma/migrations/${latest.migration}/migration.sql` +
        (definitions.length > 1 ? ` (first by ${definitions[0]!.migration}).` : '.')
      : 'Not found in prisma/migrations (created some other way).',
    'The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.',
    'Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.',
    ...(described ? ['', ...described.comment] : []),
  ];
  const comment = header.map((line) => (line === '' ? '--' : `-- ${line}`)).join('\n');
  return `${comment}\n${fn.definition.replace(/\s+$/, '')};\n`;
}

export function functionFileName(name: string): string {
  return `${name}.sql`;
}

/** Lines of a file's header before its description: the signature, a blank, and three about the file. */
const STANDARD_HEADER_LINES = 5;

/**
 * A function file as a migration states it: its description (the header after the standard lines) as a comment,
 * then its definition (CREATE OR REPLACE FUNCTION ... ;).
 */
export function migrationText(file: string): string {
  const lines = file.replace(/\r\n/g, '\n').split('\n');
  let end = 0;
  while (end < lines.length && lines[end]!.startsWith('--')) end++;
  const description = lines
    .slice(STANDARD_HEADER_LINES, end)
    .filter((line, i) => i > 0 || line.trim() !== '--');
  return [...description, lines.slice(end).join('\n').trim()].join('\n');
}
