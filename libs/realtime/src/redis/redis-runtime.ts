// The Redis side of the distributed runtime, assembled: the connections (commands, a shared subscriber, and the
// queue's) and the event bus, live registry (with its heartbeat), activity feed and credential notices on them. One
// per process.
//
// Every connection must come back from a Redis restart with each command either done or failed. ioredis drops
// (never settles) the commands in flight when the connection closes if it is told not to resend them, and an
// auto-pipelined client then waits behind them for ever; so every non-blocking connection has a command timeout,
// and the queue's connections (blocking commands, BullMQ's own retries) resend instead.

import { Cluster, Redis, type RedisOptions } from 'ioredis';

import { duplicateConnection, subscriberConnection, type RedisConnection } from './redis-connection';
import { RedisActivityFeed } from './redis-activity-feed';
import { RedisCredentialNotices } from './redis-credential-notices';
import { RedisEventBus } from './redis-event-bus';
import { RedisLiveRegistry, startLiveRegistryHeartbeat } from './redis-live-registry';

export interface RedisRealtimeOptions {
  /** The server; with clusterNodes, where the credentials, database options and TLS come from. */
  url: string;
  /**
   * `host:port` of some nodes of a Redis Cluster (the rest are discovered): every connection is then a Cluster
   * client, session events go over sharded pub/sub, and BullMQ's prefix is a hash tag.
   */
  clusterNodes?: readonly string[] | null;
  prefix: string;
  replayLimit: number;
  replayTtlSeconds: number;
  /** A command with no answer within this rejects ("Command timed out"), in flight or queued while offline. */
  commandTimeoutMs?: number;
  onError?: (error: unknown) => void;
}

/** Default command timeout: far above a healthy Redis's latency, short enough for a request to answer 503. */
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 2_000;

export interface RedisRealtime {
  /**
   * Commands connection (shared by the adapters; auto-pipelined). Other Redis users should duplicate() it, with
   * `enableAutoPipelining: false` where they need their own command timing (BullMQ, subscribers).
   */
  readonly redis: RedisConnection;
  /**
   * A new connection for BullMQ (queue, workers, timers): no command timeout (its blocking commands wait longer)
   * and every command in flight at a disconnect is sent again on reconnect, so none is left unsettled.
   */
  queueConnection(): RedisConnection;
  readonly bus: RedisEventBus;
  readonly registry: RedisLiveRegistry;
  readonly feed: RedisActivityFeed;
  readonly notices: RedisCredentialNotices;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function createRedisRealtime(options: RedisRealtimeOptions): RedisRealtime {
  // A publish whose reply was lost must not be re-sent by the client: it would publish the batch twice.
  // Auto-pipelining sends the commands issued in one turn of the event loop (a worker streaming a thousand runs
  // publishes hundreds per turn) in one write: one syscall instead of one each, in the same order.
  const commandTimeout = options.commandTimeoutMs ?? DEFAULT_REDIS_COMMAND_TIMEOUT_MS;
  const commandOptions: RedisOptions = {
    autoResendUnfulfilledCommands: false,
    lazyConnect: false,
    enableAutoPipelining: true,
    commandTimeout,
    // While Redis is away commands wait in the offline queue until the timeout rejects them.
    maxRetriesPerRequest: null,
  };
  const redis: RedisConnection = options.clusterNodes?.length
    ? new Cluster(options.clusterNodes.map(clusterNode), {
        enableAutoPipelining: true,
        redisOptions: { ...serverOptions(options.url), ...commandOptions },
      })
    : new Redis(options.url, commandOptions);
  const subscriber = subscriberConnection(redis, { autoResendUnfulfilledCommands: true });
  const queueOptions: RedisOptions = {
    autoResendUnfulfilledCommands: true,
    enableAutoPipelining: false,
    commandTimeout: undefined,
    maxRetriesPerRequest: null,
  };
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
  const notices = new RedisCredentialNotices({ redis, subscriber, prefix: options.prefix });
  const stopHeartbeat = startLiveRegistryHeartbeat(registry, { onError: options.onError });
  let closed = false;
  return {
    redis,
    queueConnection: () => duplicateConnection(redis, queueOptions),
    bus,
    registry,
    feed,
    notices,
    async ping() {
      await redis.ping();
    },
    async close() {
      if (closed) return;
      closed = true;
      stopHeartbeat();
      await Promise.allSettled([bus.close(), feed.close(), notices.close(), registry.close()]);
      await Promise.allSettled([subscriber.quit(), redis.quit()]);
    },
  };
}

/** `host:port` as a Cluster seed node. */
function clusterNode(node: string): { host: string; port: number } {
  const at = node.lastIndexOf(':');
  return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
}

/** What a redis:// URL says besides its host and port (credentials, database, TLS), as ioredis options. */
function serverOptions(url: string): RedisOptions {
  const parsed = new URL(url);
  return {
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}
