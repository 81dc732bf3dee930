// A Redis server of a test's own (the machine's redis-server binary on a free port, no persistence), so a test can
// stop, restart, pause it and cut its clients off without touching the Redis every other test shares.

import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { eventually } from './eventually';
import { Redis } from 'ioredis';

export class PrivateRedis {
  private proc: ChildProcess | null = null;

  private constructor(readonly port: number) {}

  static async start(): Promise<PrivateRedis> {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() =>
          typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
        );
      });
    });
    const redis = new PrivateRedis(port);
    await redis.up();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async up(): Promise<void> {
    this.proc = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    await eventually(
      async () => {
        const probe = new Redis(this.url, {
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        probe.on('error', () => undefined); // not up yet: tried again
        try {
          await probe.connect();
          await probe.ping();
        } finally {
          probe.disconnect();
        }
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
  }

  /** kill -9 then start again: an empty Redis (no persistence), as after a crash of a cache-only server. */
  async restart(downMs = 0): Promise<void> {
    await this.down();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.up();
  }

  /** SIGSTOP: the server keeps its connections but answers nothing until resume(). */
  pause(): void {
    this.proc?.kill('SIGSTOP');
  }

  resume(): void {
    this.proc?.kill('SIGCONT');
  }

  /** Closes every client connection but this one (a network-style cut; the data stays). Returns how many. */
  async killClients(): Promise<number> {
    const admin = new Redis(this.url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    admin.on('error', () => undefined);
    try {
      await admin.connect();
      let killed = 0;
      for (const type of ['normal', 'pubsub']) {
        killed += Number(await admin.call('CLIENT', 'KILL', 'TYPE', type, 'SKIPME', 'yes'));
      }
      return killed;
    } finally {
      admin.disconnect();
    }
  }

  async down(): Promise<void> {
    const proc = this.proc;
    if (!proc) return;
    this.proc = null;
    const exited = new Promise((r) => proc.on('exit', r));
    proc.kill('SIGKILL');
    await exited;
  }
}

/**
 * The commands a Redis ran while `work` ran, by name (INFO commandstats after CONFIG RESETSTAT; commands run by
 * scripts included; the CONFIG and INFO of this measure left out). Only meaningful on a Redis nothing else uses,
 * such as a PrivateRedis.
 */
export async function commandsDuring(
  redis: Redis,
  work: () => Promise<unknown>,
): Promise<Record<string, number>> {
  await redis.config('RESETSTAT');
  await work();
  const stats = await redis.info('commandstats');
  const calls: Record<string, number> = {};
  for (const [, name, count] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!name!.startsWith('config')) calls[name!] = Number(count);
  }
  return calls;
}
