// BullMQ's key prefix for a connection: on a Redis Cluster it is a hash tag (`{<prefix>}`), as BullMQ documents,
// so every key of a queue hashes to one slot and its multi-key scripts run there; on one server it stays as given
// (the keys of a running deployment keep their names).

import type { ConnectionOptions } from 'bullmq';
import { Cluster } from 'ioredis';

export function bullmqPrefix(prefix: string, connection: ConnectionOptions): string {
  return connection instanceof Cluster ? `{${prefix}}` : prefix;
}
