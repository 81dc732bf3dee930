// Starting and stopping the processes the benches measure: the built api as deployed (`npm start`'s Node flags and
// malloc settings, on the embedded runtime in a fresh data directory or on a fresh database of the machine's
// Postgres), and any Node program whose output is kept for its readiness and for the error report.

import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import {
  TEST_ADMIN_KEY,
  TEST_JWT_SECRET,
  createTestDatabase,
  eventually,
  freePort,
  inspectorUrl,
  memoryAfterGc,
  prepareTemplate,
  type ProcessMemory,
  type TestDatabase,
} from '../../libs/testing/src';
import { serviceProcess } from '../../scripts/lib/service-process.mjs';
import { createTenant } from './api-client';

export const ROOT = resolve(__dirname, '..', '..');

let template: Promise<void> | null = null;

/** A database of its own for an api on Postgres, copied from the migrated template (made first when missing). */
async function testDatabase(): Promise<TestDatabase> {
  template ??= prepareTemplate();
  await template;
  return createTestDatabase();
}
const API_MAIN = join(ROOT, 'dist/apps/api/apps/api/src/main.js');
/** Output chunks kept per process (the newest). */
const OUTPUT_KEPT = 200;

export type Runtime = 'postgres' | 'embedded';

/** A child process and its output so far (stdout and stderr interleaved, the newest OUTPUT_KEPT chunks). */
export interface Child {
  proc: ChildProcess;
  output: string[];
}

/** Spawns a program with its stdout and stderr kept. */
export function spawnKept(command: string, args: readonly string[], options: SpawnOptions): Child {
  const proc = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const keep = (d: Buffer) => {
    output.push(d.toString());
    if (output.length > OUTPUT_KEPT) output.shift();
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  return { proc, output };
}

/** SIGTERM, then SIGKILL after graceMs; resolves once the process has exited. */
export async function stopChild(proc: ChildProcess, graceMs = 15_000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export interface ApiOptions {
  runtime: Runtime;
  /** Variables besides the bench's defaults (no rate limits, 10,000 runs per tenant at once). */
  env?: Record<string, string>;
  /** Node flags besides `npm start`'s (a CPU profile). */
  nodeArgs?: readonly string[];
  /**
   * Starts it with its inspector on a free loopback port, so memoryAfterGc() can have it collect garbage and read
   * its memory from outside (Node's own inspector: no code of the service takes part).
   */
  inspect?: boolean;
}

/** The built api process on a runtime of its own, ready (`/readyz` 200). */
export class ApiProcess {
  /** Milliseconds from the spawn until it was ready. */
  readonly readyAfterMs: number;
  /** The inspector's WebSocket URL (started with `inspect`), read from its output at start. */
  private readonly inspector: string | null;

  private constructor(
    readonly runtime: Runtime,
    readonly url: string,
    private readonly child: Child,
    readonly database: TestDatabase | null,
    private readonly dataDir: string | null,
    readonly spawnedAt: number,
  ) {
    this.readyAfterMs = Date.now() - spawnedAt;
    this.inspector = inspectorUrl(child.output);
  }

  static async start(options: ApiOptions): Promise<ApiProcess> {
    const { runtime } = options;
    const port = await freePort();
    const database = runtime === 'postgres' ? await testDatabase() : null;
    const dataDir = runtime === 'embedded' ? mkdtempSync(join(tmpdir(), 'canopy-bench-')) : null;
    // Started as `npm start` starts it (flags and malloc settings), so the resident memory is what users see.
    const started = serviceProcess({ embedded: runtime === 'embedded' });
    const spawnedAt = Date.now();
    const args = [
      ...started.args,
      ...(options.inspect ? ['--inspect=127.0.0.1:0'] : []),
      ...(options.nodeArgs ?? []),
    ];
    const child = spawnKept(process.execPath, [...args, API_MAIN], {
      cwd: ROOT,
      env: {
        ...started.env,
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        LOG_LEVEL: 'warn',
        PORT: String(port),
        HOST: '127.0.0.1',
        CANOPY_ADMIN_KEY: TEST_ADMIN_KEY,
        CANOPY_JWT_SECRET: TEST_JWT_SECRET,
        RATE_LIMIT_PER_KEY: '0',
        RATE_LIMIT_PER_TENANT: '0',
        MAX_CONCURRENT_RUNS_PER_TENANT: '10000',
        ...options.env,
        ...(database ? { DATABASE_URL: database.url } : { CANOPY_DATA_DIR: dataDir! }),
      },
    });
    const url = `http://127.0.0.1:${port}`;
    try {
      await eventually(
        async () => {
          if (child.proc.exitCode !== null) throw new Error(`the api exited: ${child.output.join('')}`);
          const res = await fetch(`${url}/readyz`);
          if (res.status !== 200) throw new Error(`not ready: ${res.status}`);
        },
        { timeoutMs: 90_000, intervalMs: 250 },
      );
    } catch (err) {
      await stopChild(child.proc);
      await database?.drop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      throw err;
    }
    return new ApiProcess(runtime, url, child, database, dataDir, spawnedAt);
  }

  get pid(): number {
    return this.child.proc.pid!;
  }

  /** Its memory after a full garbage collection (started with `inspect`). */
  memoryAfterGc(): Promise<ProcessMemory> {
    if (!this.inspector) throw new Error('the api was not started with its inspector (ApiOptions.inspect)');
    return memoryAfterGc(this.inspector);
  }

  /** A new tenant's API key. */
  newTenant(name: string): Promise<string> {
    return createTenant(
      this.url,
      TEST_ADMIN_KEY,
      `${name}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
    );
  }

  /** The error with what became of the process and the end of its output. */
  explain(err: unknown): Error {
    const { proc, output } = this.child;
    const state =
      proc.exitCode !== null || proc.signalCode !== null
        ? `exited (${proc.exitCode ?? proc.signalCode})`
        : 'still running';
    const message = err instanceof Error ? err.message : String(err);
    return new Error(
      `${message}\nthe ${this.runtime} api, ${state}; its last output:\n${output.join('').slice(-2_000)}`,
      { cause: err },
    );
  }

  /** Stops the process and drops its database or data directory. */
  async stop(): Promise<void> {
    await stopChild(this.child.proc);
    await this.database?.drop();
    if (this.dataDir) rmSync(this.dataDir, { recursive: true, force: true });
  }
}
