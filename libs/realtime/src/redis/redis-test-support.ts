// Integration-test helpers for the Redis adapters: connections to the machine's Redis, a key prefix per
// test file, and removal of everything under it. Not exported from the library.

import { randomUUID } from 'node:crypto';

import { Redis, type RedisOptions } from 'ioredis';

import { escapeGlob } from './redis-keys';

/** The machine's Redis (no persistence; tests never share keys thanks to their prefix). */
export const TEST_REDIS_URL = 'redis://127.0.0.1:6379';

/** A prefix no other test file uses. */
export function testPrefix(file: string): string {
  return `canopy-test:${file}:${randomUUID()}`;
}

/** Opens connections and closes them all at the end of the file. */
export class TestConnections {
  private readonly open = new Set<Redis>();

  constructor(private readonly url: string = TEST_REDIS_URL) {}

  /** Connects on first use, so a test that never uses a connection leaves no socket half open. */
  connect(options: RedisOptions = {}): Redis {
    const redis = new Redis(this.url, { lazyConnect: true, ...options });
    redis.on('error', () => {}); // reconnect tests kill connections on purpose; ioredis reconnects
    this.open.add(redis);
    return redis;
  }

  async close(redis: Redis): Promise<void> {
    this.open.delete(redis);
    if (redis.status === 'end') return;
    if (redis.status === 'wait') {
      redis.disconnect(); // never connected: quit() would connect first
      return;
    }
    try {
      await redis.quit();
    } catch {
      redis.disconnect();
    }
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.open].map((redis) => this.close(redis)));
  }
}

/** Deletes every key under the prefix. */
export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${escapeGlob(prefix)}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== '0');
}

/** Keys under the prefix (for assertions on the layout). */
export async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${escapeGlob(prefix)}:*`, 'COUNT', 1000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found.sort();
}

/**
 * Drops a subscriber connection server-side (CLIENT KILL TYPE pubsub, narrowed to the one connection named
 * `connectionName` so parallel test files keep theirs), as a Redis restart or a network failure would.
 */
export async function killPubSubConnection(admin: Redis, connectionName: string): Promise<void> {
  const clients = (await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
  const line = clients.split('\n').find((l) => l.includes(` name=${connectionName} `));
  const id = line?.match(/(?:^|\s)id=(\d+)/)?.[1];
  if (!id) throw new Error(`no pub/sub connection named ${connectionName}`);
  const killed = await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub', 'ID', id);
  if (killed !== 1) throw new Error(`CLIENT KILL killed ${String(killed)} connections`);
}
