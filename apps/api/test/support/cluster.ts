// A real distributed deployment for tests: N api and M worker processes (the built deployables, started with
// node like in production) over a database of their own on the machine's Postgres and a key prefix of their own on
// its Redis. Processes can be killed (SIGKILL) and started again.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, eventually, type TestDatabase } from '@canopy/testing';
import { TEST_ADMIN_KEY } from './test-app';

const ROOT = resolve(__dirname, '../../../..');
const API_MAIN = join(ROOT, 'dist/apps/api/apps/api/src/main.js');
const WORKER_MAIN = join(ROOT, 'dist/apps/worker/apps/worker/src/main.js');

export interface ClusterProcess {
  name: string;
  proc: ChildProcess;
  url: string | null;
  output: string[];
  exited: Promise<number | null>;
}

export interface ClusterOptions {
  apis?: number;
  workers?: number;
  env?: Record<string, string>;
  redisUrl?: string;
}

export class Cluster {
  readonly processes = new Map<string, ClusterProcess>();
  readonly prefix = `ctest${randomBytes(4).toString('hex')}`;
  database!: TestDatabase;

  constructor(private readonly options: ClusterOptions = {}) {}

  get redisUrl(): string {
    return this.options.redisUrl ?? 'redis://127.0.0.1:6379';
  }

  api(i: number): string {
    const p = this.processes.get(`api-${i}`);
    if (!p?.url) throw new Error(`api-${i} is not running`);
    return p.url;
  }

  async start(): Promise<this> {
    for (const main of [API_MAIN, WORKER_MAIN]) {
      if (!existsSync(main))
        throw new Error(`${main} is missing: run npm test (it builds the deployables first)`);
    }
    this.database = await createTestDatabase();
    const apis = this.options.apis ?? 2;
    const workers = this.options.workers ?? 2;
    await Promise.all([
      ...Array.from({ length: apis }, (_, i) => this.startApi(i + 1)),
      ...Array.from({ length: workers }, (_, i) => this.startWorker(i + 1)),
    ]);
    return this;
  }

  async startApi(i: number): Promise<void> {
    const port = await freePort();
    const proc = this.spawn(`api-${i}`, API_MAIN, { PORT: String(port) });
    proc.url = `http://127.0.0.1:${port}`;
    await eventually(
      async () => {
        const res = await fetch(`${proc.url}/readyz`);
        if (res.status !== 200) throw new Error(`api-${i} not ready: ${res.status}`);
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${proc.output.join('')}`);
    });
  }

  async startWorker(i: number): Promise<void> {
    const proc = this.spawn(`worker-${i}`, WORKER_MAIN, {});
    await eventually(
      () => {
        if (!proc.output.join('').includes('ready')) throw new Error(`worker-${i} not ready`);
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${proc.output.join('')}`);
    });
  }

  /** SIGKILL: no shutdown hook runs, like a crashed machine. */
  async kill(name: string): Promise<void> {
    const p = this.processes.get(name);
    if (!p) return;
    p.proc.kill('SIGKILL');
    await p.exited;
    this.processes.delete(name);
  }

  async stop(): Promise<void> {
    await Promise.all(
      [...this.processes.values()].map(async (p) => {
        p.proc.kill('SIGTERM');
        const timer = setTimeout(() => p.proc.kill('SIGKILL'), 10_000);
        await p.exited;
        clearTimeout(timer);
      }),
    );
    this.processes.clear();
    await this.database?.drop();
  }

  private spawn(name: string, main: string, env: Record<string, string>): ClusterProcess {
    const proc = spawn(process.execPath, [main], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'test',
        LOG_LEVEL: 'info',
        DATABASE_URL: this.database.url,
        CANOPY_MIGRATE_ON_BOOT: 'false',
        REDIS_URL: this.redisUrl,
        CANOPY_REDIS_PREFIX: this.prefix,
        CANOPY_INSTANCE_ID: name,
        CANOPY_ADMIN_KEY: TEST_ADMIN_KEY,
        CANOPY_JWT_SECRET: 'test-jwt-secret-0123456789-abcdefghijklmnopqrstuvwxyz',
        RUN_LOCK_DURATION_MS: '2000',
        SHUTDOWN_GRACE_MS: '2000',
        ...this.options.env,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    proc.stdout?.on('data', (d: Buffer) => output.push(d.toString()));
    proc.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
    const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
    const entry: ClusterProcess = { name, proc, url: null, output, exited };
    this.processes.set(name, entry);
    return entry;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port')),
      );
    });
  });
}
