// A Redis Cluster of a test's own: three (or more) masters of the machine's redis-server on free ports, no
// persistence, their cluster state in a temporary directory, joined by `redis-cli --cluster create` with the
// slots spread over the masters. stop() kills them and removes the directory.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { Cluster, Redis } from 'ioredis';

import { freePort } from './cluster';
import { eventually } from './eventually';

const run = promisify(execFile);

export class PrivateRedisCluster {
  private readonly procs: ChildProcess[] = [];

  private constructor(
    readonly ports: number[],
    private readonly dir: string,
  ) {}

  static async start(masters = 3): Promise<PrivateRedisCluster> {
    const ports: number[] = [];
    while (ports.length < masters) {
      // A node also listens on its port + 10000 (the cluster bus): both must be free.
      const port = await freePort();
      if (port + 10_000 > 65_535 || ports.includes(port) || !(await isFree(port + 10_000))) continue;
      ports.push(port);
    }
    const cluster = new PrivateRedisCluster(ports, mkdtempSync(join(tmpdir(), 'canopy-redis-cluster-')));
    try {
      await cluster.up();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** host:port of every master, as REDIS_CLUSTER_NODES takes them. */
  get nodes(): string[] {
    return this.ports.map((port) => `127.0.0.1:${port}`);
  }

  /** A client of the cluster (the caller closes it). */
  connect(): Cluster {
    return new Cluster(
      this.ports.map((port) => ({ host: '127.0.0.1', port })),
      { lazyConnect: true },
    );
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.procs.splice(0).map(async (proc) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return;
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGKILL');
        await exited;
      }),
    );
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async up(): Promise<void> {
    for (const port of this.ports) {
      const proc = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(this.dir, `nodes-${port}.conf`),
          '--dir',
          this.dir,
          '--save',
          '',
          '--appendonly',
          'no',
        ],
        { stdio: 'ignore' },
      );
      this.procs.push(proc);
    }
    await Promise.all(
      this.ports.map((port) => eventually(() => ping(port), { timeoutMs: 10_000, intervalMs: 100 })),
    );
    await run('redis-cli', [
      '--cluster',
      'create',
      ...this.nodes,
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    // Every node must see all slots served before a client can rely on its slot map.
    await eventually(
      async () => {
        for (const port of this.ports) {
          const info = await command(port, ['CLUSTER', 'INFO']);
          if (!/cluster_state:ok/.test(String(info))) throw new Error(`node ${port}: cluster not ready`);
        }
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
  }
}

async function ping(port: number): Promise<void> {
  await command(port, ['PING']);
}

async function command(port: number, args: string[]): Promise<unknown> {
  const probe = new Redis(port, '127.0.0.1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => undefined); // not up yet: tried again
  try {
    await probe.connect();
    return await probe.call(args[0]!, ...args.slice(1));
  } finally {
    probe.disconnect();
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
