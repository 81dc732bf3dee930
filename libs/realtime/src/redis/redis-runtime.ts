// The Redis side of the distributed runtime, assembled: the connections (commands, a shared subscriber) and the
// event bus, live registry (with its heartbeat) and activity feed on them. One per process.

import { Redis } from 'ioredis';
import { RedisActivityFeed } from './redis-activity-feed';
import { RedisEventBus } from './redis-event-bus';
import { RedisLiveRegistry, startLiveRegistryHeartbeat } from './redis-live-registry';

export interface RedisRealtimeOptions {
  url: string;
  prefix: string;
  replayLimit: number;
  replayTtlSeconds: number;
  onError?: (error: unknown) => void;
}

export interface RedisRealtime {
  /**
   * Commands connection (shared by the adapters; auto-pipelined). Other Redis users should duplicate() it, with
   * `enableAutoPipelining: false` where they need their own command timing (BullMQ, subscribers).
   */
  readonly redis: Redis;
  readonly bus: RedisEventBus;
  readonly registry: RedisLiveRegistry;
  readonly feed: RedisActivityFeed;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function createRedisRealtime(options: RedisRealtimeOptions): RedisRealtime {
  // A publish whose reply was lost must not be re-sent by the client: it would publish the batch twice.
  // Auto-pipelining sends the commands issued in one turn of the event loop (a worker streaming a thousand runs
  // publishes hundreds per turn) in one write: one syscall instead of one each, in the same order.
  const redis = new Redis(options.url, {
    autoResendUnfulfilledCommands: false,
    lazyConnect: false,
    enableAutoPipelining: true,
  });
  const subscriber = redis.duplicate({ autoResendUnfulfilledCommands: true, enableAutoPipelining: false });
  redis.on('error', (err) => options.onError?.(err));
  subscriber.on('error', (err) => options.onError?.(err));
  const bus = new RedisEventBus({
    redis,
    subscriber,
    prefix: options.prefix,
    replayLimit: options.replayLimit,
    replayTtlSeconds: options.replayTtlSeconds,
  });
  const registry = new RedisLiveRegistry({ redis, prefix: options.prefix });
  const feed = new RedisActivityFeed({ redis, subscriber, prefix: options.prefix });
  const stopHeartbeat = startLiveRegistryHeartbeat(registry, { onError: options.onError });
  let closed = false;
  return {
    redis,
    bus,
    registry,
    feed,
    async ping() {
      await redis.ping();
    },
    async close() {
      if (closed) return;
      closed = true;
      stopHeartbeat();
      await Promise.allSettled([bus.close(), feed.close(), registry.close()]);
      await Promise.allSettled([subscriber.quit(), redis.quit()]);
    },
  };
}
