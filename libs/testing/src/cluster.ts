// A real distributed deployment for tests and benchmarks: N api and M worker processes (the built deployables,
// started with node like in production) over a database of their own on the machine's Postgres and a key prefix
// of their own on its Redis (or a private Redis and database a test gives it). Processes can be killed (SIGKILL) and started again; stop() ends them, drops the
// database and deletes the prefix's Redis keys.

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { eventually } from './eventually';
import { inspectorUrl, memoryAfterGc, type ProcessMemory } from './process-inspector';
import { TEST_ADMIN_KEY, TEST_JWT_SECRET } from './test-credentials';
import { createTestDatabase, type TestDatabase } from './test-postgres';

const ROOT = resolve(__dirname, '../../..');
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
  /** Environment of every process, over the defaults (a deployment's settings: limits, pools, log level ...). */
  env?: Record<string, string>;
  /** Environment of one process (`api-1`, `worker-2`, ...) over `env`, asked at each of its starts. */
  processEnv?: (name: string) => Record<string, string>;
  redisUrl?: string;
  /** Starts the Redis key prefix (a random suffix follows); default `ctest`. */
  prefixBase?: string;
  /** How long each process may take to boot (default 30 s; more on a machine busy with a load). */
  readyTimeoutMs?: number;
  /**
   * Start every process with its inspector on a free loopback port, so memoryAfterGc() can ask it to collect
   * garbage and report its memory (for memory checks; off by default).
   */
  inspect?: boolean;
  /** Node arguments before each process's entry point (e.g. what `npm start` gives a deployable). */
  nodeArgs?: string[];
  /** A migrated database to use (e.g. on a PrivatePostgres); default: one of its own on the machine's Postgres. */
  database?: TestDatabase;
  /** A directory to append every process's output to, as `<name>.log` (a restarted process appends). */
  logDir?: string;
}

export class Cluster {
  readonly processes = new Map<string, ClusterProcess>();
  readonly prefix: string;
  readonly adminKey = TEST_ADMIN_KEY;
  database!: TestDatabase;
  private readonly logDir: string | null;

  constructor(private readonly options: ClusterOptions = {}) {
    this.prefix = `${options.prefixBase ?? 'ctest'}${randomBytes(4).toString('hex')}`;
    // CANOPY_CLUSTER_LOGS=DIR keeps the logs of every cluster a test starts (to look into a failure).
    this.logDir = options.logDir ?? process.env.CANOPY_CLUSTER_LOGS ?? null;
    if (this.logDir) mkdirSync(this.logDir, { recursive: true });
  }

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
        throw new Error(
          `${main} is missing: run npm test or npm run bench (they build the deployables first)`,
        );
    }
    this.database = this.options.database ?? (await createTestDatabase());
    const apis = this.options.apis ?? 2;
    const workers = this.options.workers ?? 2;
    const started = await Promise.allSettled([
      ...Array.from({ length: apis }, (_, i) => this.startApi(i + 1)),
      ...Array.from({ length: workers }, (_, i) => this.startWorker(i + 1)),
    ]);
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      // The caller holds no cluster to stop: what did start is stopped here, not left running after the test.
      await this.stop().catch(() => undefined);
      throw failed.reason;
    }
    return this;
  }

  /** Starts api #i; `readyTimeoutMs` bounds its boot (longer on a machine busy with a load). */
  async startApi(i: number, readyTimeoutMs = this.options.readyTimeoutMs ?? 30_000): Promise<void> {
    const port = await freePort();
    const proc = this.spawn(`api-${i}`, API_MAIN, { PORT: String(port) });
    proc.url = `http://127.0.0.1:${port}`;
    await eventually(
      async () => {
        const res = await fetch(`${proc.url}/readyz`);
        if (res.status !== 200) throw new Error(`api-${i} not ready: ${res.status}`);
      },
      { timeoutMs: readyTimeoutMs, intervalMs: 200 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${proc.output.join('')}`);
    });
  }

  async startWorker(i: number, readyTimeoutMs = this.options.readyTimeoutMs ?? 30_000): Promise<void> {
    const proc = this.spawn(`worker-${i}`, WORKER_MAIN, {});
    await eventually(
      () => {
        if (!proc.output.join('').includes('ready')) throw new Error(`worker-${i} not ready`);
      },
      { timeoutMs: readyTimeoutMs, intervalMs: 200 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${proc.output.join('')}`);
    });
  }

  /** Each process's memory after a full garbage collection (needs `inspect`). */
  async memoryAfterGc(): Promise<Record<string, ProcessMemory>> {
    const out: Record<string, ProcessMemory> = {};
    for (const [name, p] of this.processes) {
      const url = inspectorUrl(p.output);
      if (!url) throw new Error(`${name} has no inspector (start the cluster with inspect: true)`);
      out[name] = await memoryAfterGc(url);
    }
    return out;
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
    await this.deleteRedisKeys();
  }

  /** Deletes every key of the prefix; best effort (a test may have stopped its Redis already). */
  private async deleteRedisKeys(): Promise<void> {
    const redis = new Redis(this.redisUrl, {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
    });
    redis.on('error', () => undefined);
    try {
      await redis.connect();
      // Keys start with the prefix, or with it inside a hash tag (the rate limiter's `{<prefix>:...}:hits`).
      for (const pattern of [`${this.prefix}:*`, `{${this.prefix}:*`]) {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
          if (keys.length > 0) await redis.unlink(...keys);
          cursor = next;
        } while (cursor !== '0');
      }
    } catch {
      // Redis is gone: its keys went with it, or expire by their TTL.
    } finally {
      redis.disconnect();
    }
  }

  private spawn(name: string, main: string, env: Record<string, string>): ClusterProcess {
    const args = [
      ...(this.options.nodeArgs ?? []),
      ...(this.options.inspect ? ['--inspect=127.0.0.1:0'] : []),
      main,
    ];
    const proc = spawn(process.execPath, args, {
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
        CANOPY_JWT_SECRET: TEST_JWT_SECRET,
        RUN_LOCK_DURATION_MS: '2000',
        SHUTDOWN_GRACE_MS: '2000',
        ...this.options.env,
        ...this.options.processEnv?.(name),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    const logFile = this.logDir ? join(this.logDir, `${name}.log`) : null;
    const keep = (d: Buffer) => {
      output.push(d.toString());
      if (logFile) appendFileSync(logFile, d);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
    const entry: ClusterProcess = { name, proc, url: null, output, exited };
    this.processes.set(name, entry);
    return entry;
  }
}

/** A TCP port free on the loopback interface right now. */
export function freePort(): Promise<number> {
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
