// Applies the SQL migrations of prisma/migrations with Prisma's own schema engine compiled to WASM, so the
// `_prisma_migrations` bookkeeping is exactly what `prisma migrate deploy` keeps (and that command can take over
// wherever the native engine is available). Already-applied migrations are skipped. Each migration script goes
// to Postgres whole, as the native engine sends it (see wholeScripts), so it may define functions.

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
}

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
    const out = await engine.applyMigrations({
      migrationsList: {
        baseDir,
        lockfile: { path: 'migration_lock.toml', content: lockfile },
        shadowDbInitScript: '',
        migrationDirectories,
      },
      filters: { externalTables: [], externalEnums: [] },
    });
    return { applied: out.appliedMigrationNames };
  } finally {
    engine?.free();
    await pool.end();
  }
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
