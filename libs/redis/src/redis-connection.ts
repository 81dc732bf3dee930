// A connection the Redis adapters run on: one Redis server, or a Redis Cluster. Every key and channel of a session
// carries its hash tag, so a session's script, MULTI and pipeline stay within one slot either way; on a Cluster a
// session's events go over sharded pub/sub (SPUBLISH / SSUBSCRIBE, served by the shard that owns the slot) instead
// of PUBLISH, which every node of a cluster would have to forward.

import { Cluster, type ClusterOptions, type Redis, type RedisOptions } from 'ioredis';

export type RedisConnection = Redis | Cluster;

export function isCluster(connection: RedisConnection): connection is Cluster {
  return connection instanceof Cluster;
}

/**
 * A new connection with the same server(s) and options, the given ones overriding. A Cluster's duplicate opens a
 * sharded subscriber per master, so it can SSUBSCRIBE.
 */
export function duplicateConnection(
  connection: RedisConnection,
  options: Partial<RedisOptions> & Partial<ClusterOptions> = {},
): RedisConnection {
  if (isCluster(connection)) {
    const { enableAutoPipelining, ...redisOptions } = options;
    return connection.duplicate(undefined, {
      shardedSubscribers: true,
      ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
      redisOptions: { ...connection.options.redisOptions, ...redisOptions },
    });
  }
  return connection.duplicate(options);
}

/**
 * PUBLISH where the order of messages matters across publishes: a Cluster sends a PUBLISH (it names no key) to any
 * node, and two messages sent to two nodes may reach a subscriber in either order; so on a Cluster every PUBLISH
 * goes to one master (the first by address: the same one for every process while the cluster's masters stay). A
 * Cluster connection learns its masters while it connects: until it is ready a publish waits for it (as long as a
 * command may wait: the connection's commandTimeout, else 10 s; then it fails), rather than go to whichever node
 * answers first and overtake (or be overtaken by) the publishes after it.
 */
export async function publishInOrder(
  connection: RedisConnection,
  channel: string,
  message: string,
): Promise<number> {
  if (!isCluster(connection)) return connection.publish(channel, message);
  if (connection.status !== 'ready') {
    await clusterReady(connection, connection.options.redisOptions?.commandTimeout ?? 10_000);
  }
  const [node] = connection.nodes('master').sort((a, b) => address(a).localeCompare(address(b)));
  return (node ?? connection).publish(channel, message);
}

/** Resolves once the Cluster is ready; rejects when it ends or is not ready within timeoutMs. */
function clusterReady(cluster: Cluster, timeoutMs: number): Promise<void> {
  if (cluster.status === 'end') return Promise.reject(new Error('Connection is closed.'));
  const ready = new Promise<void>((resolve, reject) => {
    const settle = (error: Error | null) => {
      clearTimeout(timer);
      cluster.off('ready', onReady);
      cluster.off('end', onEnd);
      if (error) reject(error);
      else resolve();
    };
    const onReady = () => settle(null);
    const onEnd = () => settle(new Error('Connection is closed.'));
    const timer = setTimeout(
      () => settle(new Error(`Redis Cluster not ready within ${timeoutMs} ms (status ${cluster.status})`)),
      timeoutMs,
    );
    cluster.once('ready', onReady);
    cluster.once('end', onEnd);
  });
  // A lazy connection connects on its first command; its errors reach the 'error' listeners and, once it gives up, 'end'.
  if (cluster.status === 'wait') cluster.connect().catch(() => undefined);
  return ready;
}

function address(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}

/**
 * A duplicate for SUBSCRIBE only, with no ready check: Redis accepts SUBSCRIBE before a connection is ready (it is
 * allowed while the server loads its data), so ioredis sends one made in that moment at once; its ready check's INFO
 * then meets a connection in subscriber mode, fails, and closes it, failing the SUBSCRIBE too (a process starting
 * under load did not start). A subscriber needs no ready check: it reads no data.
 */
export function subscriberConnection(
  connection: RedisConnection,
  options: Partial<RedisOptions> & Partial<ClusterOptions> = {},
): RedisConnection {
  return duplicateConnection(connection, {
    enableAutoPipelining: false,
    enableReadyCheck: false,
    ...options,
  });
}
