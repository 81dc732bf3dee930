// The baseline relay as the cluster bench runs it: bench/relay's processes in Canopy's layout (APIS relay apis and
// WORKERS relay workers on one Redis), started and stopped like Canopy's Cluster.

import { join } from 'node:path';

import { freePort } from '../../libs/testing/src';
import { waitFor } from '../lib/api-client';
import { spawnKept, stopChild, type Child } from '../lib/processes';
import { APIS, DELTAS, DELTA_MS, WORKERS } from '../cluster/scenario';

/** bench/relay's processes in Canopy's layout: APIS relay apis and WORKERS relay workers on one Redis. */
export class RelayDeployment {
  readonly processes = new Map<string, Child & { url: string | null }>();
  readonly adminKey = 'relay';
  private readonly prefix = `relay${Math.random().toString(36).slice(2, 8)}`;

  constructor(
    private readonly redisUrl: string,
    private readonly probeEnv: Record<string, string>,
  ) {}

  api(i: number): string {
    const url = this.processes.get(`api-${i}`)?.url;
    if (!url) throw new Error(`relay api-${i} is not running`);
    return url;
  }

  async start(): Promise<void> {
    for (let i = 1; i <= WORKERS; i++) {
      this.spawn(`worker-${i}`, 'relay-worker.mjs', { RELAY_INDEX: String(i - 1) }, null);
    }
    for (let i = 1; i <= APIS; i++) {
      const port = await freePort();
      this.spawn(`api-${i}`, 'relay-api.mjs', { PORT: String(port) }, `http://127.0.0.1:${port}`);
    }
    await waitFor(
      () => [...this.processes.values()].every((p) => /listening|ready/.test(p.output.join(''))),
      30_000,
    );
  }

  async stop(): Promise<void> {
    await Promise.all([...this.processes.values()].map(({ proc }) => stopChild(proc)));
    this.processes.clear();
  }

  private spawn(name: string, file: string, env: Record<string, string>, url: string | null): void {
    const child = spawnKept(process.execPath, [join(__dirname, file)], {
      env: {
        PATH: process.env.PATH ?? '',
        REDIS_URL: this.redisUrl,
        RELAY_PREFIX: this.prefix,
        RELAY_WORKERS: String(WORKERS),
        RELAY_DELTAS: String(DELTAS),
        RELAY_DELTA_MS: String(DELTA_MS),
        ...this.probeEnv,
        ...env,
      },
    });
    this.processes.set(name, { ...child, url });
  }
}
