// The Redis connections of a distributed process: the commands connection (shared, auto-pipelined), one shared
// subscriber, and new connections for BullMQ. The realtime adapters and the queue both run on them; one set per
// process.
//
// Every connection must come back from a Redis restart with each command either done or failed. ioredis drops
// (never settles) the commands in flight when the connection closes if it is told not to resend them, and an
// auto-pipelined client then waits behind them for ever; so every non-blocking connection has a command timeout,
// and the queue's connections (blocking commands, BullMQ's own retries) resend instead.

import { Cluster, Redis, type RedisOptions } from 'ioredis';

import { duplicateConnection, subscriberConnection, type RedisConnection } from './redis-connection';

export interface RedisConnectionsOptions {
  /** The server; with clusterNodes, where the credentials, database options and TLS come from. */
  url: string;
  /**
   * `host:port` of some nodes of a Redis Cluster (the rest are discovered): every connection is then a Cluster
   * client, session events go over sharded pub/sub, and BullMQ's prefix is a hash tag.
   */
  clusterNodes?: readonly string[] | null;
  /** A command with no answer within this rejects ("Command timed out"), in flight or queued while offline. */
  commandTimeoutMs?: number;
  onError?: (error: unknown) => void;
}

/** Default command timeout: far above a healthy Redis's latency, short enough for a request to answer 503. */
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 2_000;

export interface RedisConnections {
  /**
   * Commands connection (shared; auto-pipelined). Other Redis users should duplicate() it, with
   * `enableAutoPipelining: false` where they need their own command timing (BullMQ, subscribers).
   */
  readonly redis: RedisConnection;
  /** One subscriber connection the realtime adapters share (SUBSCRIBE / SSUBSCRIBE only). */
  readonly subscriber: RedisConnection;
  /**
   * A new connection for BullMQ (queue, workers, timers): no command timeout (its blocking commands wait longer)
   * and every command in flight at a disconnect is sent again on reconnect, so none is left unsettled.
   */
  queueConnection(): RedisConnection;
  ping(): Promise<void>;
  /** Quits the commands and shared subscriber connections (the users of the others close their own). */
  close(): Promise<void>;
}

export function createRedisConnections(options: RedisConnectionsOptions): RedisConnections {
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
  let closed = false;
  return {
    redis,
    subscriber,
    queueConnection: () => duplicateConnection(redis, queueOptions),
    async ping() {
      await redis.ping();
    },
    async close() {
      if (closed) return;
      closed = true;
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
