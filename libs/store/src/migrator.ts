// Applies the SQL migrations of prisma/migrations with Prisma's own schema engine compiled to WASM, so the
// `_prisma_migrations` bookkeeping is exactly what `prisma migrate deploy` keeps (and that command can take over
// wherever the native engine is available). Already-applied migrations are skipped. Each migration script goes
// to Postgres whole, as the native engine sends it (see wholeScripts), so it may define functions.
//
// The schema starts from one baseline migration. A database built by the migrations that came before it (whose end
// state is exactly the baseline's schema) is recognised: the baseline is recorded as applied in their place. One
// whose history holds migrations this version does not have is refused with what to do, before anything runs.

import { readFile, readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Pool } from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { DriverAdapterError, bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import * as engineJs from '@prisma/schema-engine-wasm/schema_engine_bg';

export interface MigrateOptions {
  url: string;
  migrationsDir: string;
  /** Receives the engine's progress messages. */
  log?: (message: string) => void;
}

export interface MigrateResult {
  applied: string[];
  /** The migrations before the baseline whose record the baseline took over (a database built by them). */
  adopted: string[];
}

/** The baseline: the whole schema in one migration. */
export const BASELINE_MIGRATION = '20261206000000_baseline';

/**
 * The migrations the baseline replaced, in order. A database that applied all of them has the baseline's schema,
 * object for object (checked by comparing pg_dump's schema of both when the baseline was made).
 */
export const BEFORE_BASELINE: readonly string[] = [
  '20261121000000_init',
  '20261121100000_run_steer_rollback',
  '20261122000000_hot_path_functions',
  '20261123000000_steer_becomes_run_input',
  '20261124000000_tenant_run_limit',
  '20261125000000_run_stats_indexes',
  '20261201000000_run_actor',
  '20261204000000_find_fork_expire',
  '20261205000000_commit_titles',
  '20261206020000_saas_admin_webhooks_quotas',
  '20261206020100_usage_rollup',
  '20261206030000_fork_fewer_checks',
  '20261207100000_unique_tenant_names',
  '20261207110000_queued_prompts',
  '20261208000000_fork_function',
  '20261209000000_cow_forks',
  '20261210000000_commit_reports_queue',
  '20261211000000_usage_functions_inline',
  '20261212000000_fork_path_usage',
  '20261213000000_create_session_function',
  '20261214000000_start_run_busy_count',
  '20261215000000_index_nodes_once',
  '20261216000000_hot_path_generic_plans',
  '20261217000000_load_tree_function',
  '20261218000000_exact_run_quotas',
  '20261218010000_webhook_endpoint_leases',
  '20261218020000_staged_imports',
];

let engineReady: Promise<void> | undefined;

/** The slice of the WebAssembly global used here (Node has it; this project's lib settings don't type it). */
interface WasmGlobal {
  instantiate(
    bytes: Uint8Array,
    imports: Record<string, object>,
  ): Promise<{ instance: { exports: Record<string, unknown> } }>;
}
const { WebAssembly } = globalThis as unknown as { WebAssembly: WasmGlobal };

function loadEngine(): Promise<void> {
  engineReady ??= (async () => {
    const wasmPath = join(
      dirname(require.resolve('@prisma/schema-engine-wasm/schema_engine_bg')),
      'schema_engine_bg.wasm',
    );
    const { instance } = await WebAssembly.instantiate(await readFile(wasmPath), {
      './schema_engine_bg.js': withUnrefTimers(engineJs),
    });
    engineJs.__wbg_set_wasm(instance.exports);
    (instance.exports as { __wbindgen_start?: () => void }).__wbindgen_start?.();
  })();
  return engineReady;
}

/**
 * The engine arms 10 s timers it never clears; unref them so they cannot keep a finished CLI run or test
 * process alive (they still fire while the process lives for other reasons).
 */
function withUnrefTimers(glue: typeof engineJs): Record<string, unknown> {
  const imports: Record<string, unknown> = { ...glue };
  for (const [name, fn] of Object.entries(glue)) {
    if (name.startsWith('__wbg_setTimeout_') && typeof fn === 'function') {
      imports[name] = (...args: unknown[]) => {
        const timer = (fn as (...a: unknown[]) => unknown)(...args);
        (timer as { unref?: () => void } | null)?.unref?.();
        return timer;
      };
    }
  }
  return imports;
}

export async function applyMigrations(options: MigrateOptions): Promise<MigrateResult> {
  await loadEngine();
  const baseDir = resolve(options.migrationsDir);
  const entries = await readdir(baseDir, { withFileTypes: true });
  const dirs = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const migrationDirectories = await Promise.all(
    dirs.map(async (dir) => ({
      path: dir,
      migrationFile: {
        path: 'migration.sql',
        content: await readFile(join(baseDir, dir, 'migration.sql'), 'utf8').then(
          (value) => ({ tag: 'ok' as const, value }),
          (err: Error) => ({ tag: 'error' as const, value: err.message }),
        ),
      },
    })),
  );
  const lockfile = await readFile(join(baseDir, 'migration_lock.toml'), 'utf8').catch(() => null);

  const pool = new Pool({ connectionString: options.url, max: 1 });
  let engine: engineJs.SchemaEngine | undefined;
  try {
    engine = await engineJs.SchemaEngine.new(
      { datamodels: undefined },
      (line: string) => options.log?.(engineMessage(line)),
      bindMigrationAwareSqlAdapterFactory(wholeScripts(new PrismaPg(pool), pool)),
    );
    const migrationsList = {
      baseDir,
      lockfile: { path: 'migration_lock.toml', content: lockfile },
      shadowDbInitScript: '',
      migrationDirectories,
    };
    const history = await appliedMigrations(pool);
    const adopted = adoptable(history, dirs);
    if (adopted.length) {
      // The baseline's record first: stopped between the two steps, the next start finds both and ends the job.
      if (!history.includes(BASELINE_MIGRATION)) {
        await engine.markMigrationApplied({ migrationName: BASELINE_MIGRATION, migrationsList });
      }
      await pool.query('DELETE FROM _prisma_migrations WHERE migration_name = ANY($1::text[])', [adopted]);
      options.log?.(
        `the database was built by the ${adopted.length} migrations before ${BASELINE_MIGRATION}: its schema is ` +
          "the baseline's, recorded as applied in their place",
      );
    } else {
      refuseUnknownHistory(history, dirs);
    }
    const out = await engine.applyMigrations({
      migrationsList,
      filters: { externalTables: [], externalEnums: [] },
    });
    return { applied: out.appliedMigrationNames, adopted };
  } finally {
    engine?.free();
    await pool.end();
  }
}

/** A history this version cannot migrate from. Named 'StartupRefusal': the process prints its message alone. */
export class MigrationHistoryRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupRefusal';
  }
}

/** The migrations the database records as applied (none when it has no history table yet). */
async function appliedMigrations(pool: Pool): Promise<string[]> {
  let rows: Array<{ name: string }>;
  try {
    ({ rows } = await pool.query<{ name: string }>(
      'SELECT migration_name AS name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    ));
  } catch (err) {
    // 42P01: no such table, a database never migrated.
    if ((err as { code?: string }).code === '42P01') return [];
    throw err;
  }
  return rows.map((r) => r.name);
}

/**
 * The records the baseline takes over: all of BEFORE_BASELINE when the database applied every one of them and
 * nothing else this version lacks, and the baseline is among this version's migrations; none otherwise.
 */
export function adoptable(history: readonly string[], available: readonly string[]): string[] {
  if (!available.includes(BASELINE_MIGRATION)) return [];
  const applied = new Set(history);
  if (!BEFORE_BASELINE.every((name) => applied.has(name))) return [];
  const unknown = history.filter((name) => !available.includes(name) && !BEFORE_BASELINE.includes(name));
  return unknown.length ? [] : [...BEFORE_BASELINE];
}

/** Refuses a history that holds migrations this version does not have: another version migrated the database. */
export function refuseUnknownHistory(history: readonly string[], available: readonly string[]): void {
  const unknown = history.filter((name) => !available.includes(name));
  if (!unknown.length) return;
  const shown =
    unknown.slice(0, 3).join(', ') + (unknown.length > 3 ? ` and ${unknown.length - 3} more` : '');
  const earlier = unknown.every((name) => BEFORE_BASELINE.includes(name));
  const elsewhere =
    'or start this version on a new database (another CANOPY_DATA_DIR or DATABASE_URL) and move the ' +
    'conversations over with GET /v1/export and POST /v1/import.';
  throw new MigrationHistoryRefusal(
    earlier
      ? `the database was migrated by an earlier version of Canopy, not to the end of its migrations (it records ` +
          `${shown}, which this version does not have). Start that version on it once, so that it finishes its ` +
          `migrations, then this one, which takes the database over; ${elsewhere}`
      : `the database was migrated by another version of Canopy (it records ${shown}, which this version does ` +
          `not have). Run the version that migrated it, ${elsewhere}`,
  );
}

/**
 * The pg adapter, except that a migration script runs as ONE simple-protocol query, the way the native engine
 * (`prisma migrate deploy`) sends it. The adapter's own executeScript cuts the script at every `;` and sends the
 * pieces one by one, which breaks a function body (PL/pgSQL statements end with `;`), or a `;` in a comment or a
 * string. Whole, a script is also atomic: Postgres runs a multi-statement query as one implicit transaction, so
 * a migration that fails leaves nothing half-applied (a script that needs to run outside a transaction, e.g.
 * CREATE INDEX CONCURRENTLY, must be a migration of that one statement).
 */
function wholeScripts(factory: PrismaPg, pool: Pool): PrismaPg {
  const connect = factory.connect.bind(factory);
  factory.connect = async () => {
    const adapter = await connect();
    adapter.executeScript = async (script: string) => {
      try {
        await pool.query(script);
      } catch (err) {
        throw asDriverError(err);
      }
    };
    return adapter;
  };
  return factory;
}

/** A Postgres error as the engine reports the adapter's own (SQLSTATE, message, detail); anything else as is. */
function asDriverError(err: unknown): unknown {
  const e = err as {
    code?: unknown;
    severity?: unknown;
    message?: unknown;
    detail?: unknown;
    column?: unknown;
    hint?: unknown;
  };
  if (typeof e?.code !== 'string' || typeof e.severity !== 'string') return err;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  return new DriverAdapterError({
    kind: 'postgres',
    code: e.code,
    severity: e.severity,
    message: text(e.message) ?? '',
    detail: text(e.detail),
    column: text(e.column),
    hint: text(e.hint),
  });
}

/** The engine logs JSON lines (the applied SQL included); keep the message only. */
function engineMessage(line: string): string {
  try {
    const parsed = JSON.parse(line) as { fields?: { message?: string } };
    return parsed.fields?.message ?? line;
  } catch {
    return line;
  }
}
