// What the cluster bench reads of Redis over a phase: its commands (INFO stats and commandstats), its CPU (INFO cpu),
// the PUBLISHes on channels other than the event bus's, and the entries added to BullMQ's event streams.

import type { Redis } from 'ioredis';

/** The event bus's commands on a publish (redis-event-bus.ts): the log's append, the delivery, the log's TTL. */
export const BUS_COMMANDS = ['xadd', 'publish', 'spublish', 'expire'] as const;

/**
 * Counts the messages published on some channel patterns while it runs: its own connection, PSUBSCRIBEd before the
 * phase starts (one more subscriber for those channels only: the activity feed and run control, a few per run).
 */
export class PublishCounter {
  private count = 0;

  private constructor(private readonly subscriber: Redis | null) {
    subscriber?.on('pmessage', () => {
      this.count++;
    });
  }

  static async start(redis: Redis, patterns: string[]): Promise<PublishCounter> {
    if (patterns.length === 0) return new PublishCounter(null);
    const subscriber = redis.duplicate();
    await subscriber.psubscribe(...patterns);
    return new PublishCounter(subscriber);
  }

  /** The messages counted; closes the connection. */
  async stop(): Promise<number> {
    if (this.subscriber) {
      await this.subscriber.punsubscribe().catch(() => undefined);
      this.subscriber.disconnect();
    }
    return this.count;
  }
}

/** Entries ever added to the streams whose keys match a pattern (XINFO STREAM entries-added, Redis 7). */
export async function streamEntriesAdded(redis: Redis, pattern: string): Promise<number> {
  let total = 0;
  for await (const keys of redis.scanStream({ match: pattern, type: 'stream', count: 1_000 })) {
    for (const key of keys as string[]) {
      const info = (await redis.xinfo('STREAM', key)) as unknown[];
      const at = info.indexOf('entries-added');
      total += at >= 0 ? Number(info[at + 1]) : 0;
    }
  }
  return total;
}

/** Redis's total_commands_processed and the calls per command (INFO commandstats). */
export async function commandStats(stats: Redis): Promise<{ total: number; calls: Map<string, number> }> {
  const [general, commands] = await Promise.all([stats.info('stats'), stats.info('commandstats')]);
  const calls = new Map<string, number>();
  for (const match of commands.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    calls.set(match[1]!, Number(match[2]));
  return { total: Number(/^total_commands_processed:(\d+)/m.exec(general)?.[1] ?? Number.NaN), calls };
}

/** Redis's own CPU time so far, in seconds (INFO cpu: system and user). */
export async function redisCpuSeconds(stats: Redis): Promise<number> {
  const info = await stats.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return field('used_cpu_sys') + field('used_cpu_user');
}
