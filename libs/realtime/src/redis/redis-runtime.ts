// The realtime side of the distributed runtime, assembled on the process's Redis connections (@canopy/redis): the
// event bus, live registry (with its heartbeat), activity feed and credential notices. One per process.

import type { RedisConnection, RedisConnections } from '@canopy/redis';

import { RedisActivityFeed } from './redis-activity-feed';
import { RedisCredentialNotices } from './redis-credential-notices';
import { RedisEventBus } from './redis-event-bus';
import { RedisLiveRegistry, startLiveRegistryHeartbeat } from './redis-live-registry';

export interface RedisRealtimeOptions {
  prefix: string;
  replayLimit: number;
  replayTtlSeconds: number;
  onError?: (error: unknown) => void;
}

export interface RedisRealtime {
  /** The commands connection the adapters run on (the process's; see RedisConnections). */
  readonly redis: RedisConnection;
  readonly bus: RedisEventBus;
  readonly registry: RedisLiveRegistry;
  readonly feed: RedisActivityFeed;
  readonly notices: RedisCredentialNotices;
  /** Stops the heartbeat and closes the adapters; the connections are their owner's to quit. */
  close(): Promise<void>;
}

export function createRedisRealtime(connections: RedisConnections, options: RedisRealtimeOptions): RedisRealtime {
  const { redis, subscriber } = connections;
  const bus = new RedisEventBus({
    redis,
    subscriber,
    prefix: options.prefix,
    replayLimit: options.replayLimit,
    replayTtlSeconds: options.replayTtlSeconds,
  });
  const registry = new RedisLiveRegistry({ redis, prefix: options.prefix });
  const feed = new RedisActivityFeed({ redis, subscriber, prefix: options.prefix });
  const notices = new RedisCredentialNotices({ redis, subscriber, prefix: options.prefix });
  const stopHeartbeat = startLiveRegistryHeartbeat(registry, { onError: options.onError });
  let closed = false;
  return {
    redis,
    bus,
    registry,
    feed,
    notices,
    async close() {
      if (closed) return;
      closed = true;
      stopHeartbeat();
      await Promise.allSettled([bus.close(), feed.close(), notices.close(), registry.close()]);
    },
  };
}
