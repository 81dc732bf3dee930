// The subscriptions of one Redis subscriber connection, shared by every adapter that uses the connection: SUBSCRIBE
// and PSUBSCRIBE per channel or pattern, reference-counted, serialized per name (a SUBSCRIBE never overtakes the
// UNSUBSCRIBE before it), with each message routed to the handlers of its channel or pattern.
//
// A handler starts receiving once a SUBSCRIBE round trip sent after it was registered has come back, even when the
// connection already was subscribed (Redis acknowledges a repeated SUBSCRIBE without subscribing twice): the
// connection delivers in order, so no message published before the handler asked can reach it, and every message
// published after `listen` resolved does. ioredis resubscribes by itself after a reconnect; `onResubscribed`
// listeners run once the subscriptions are known to be back, so adapters can catch up on what was published while
// the connection was down.

import { Logger } from '@nestjs/common';
import type { RedisConnection } from '@canopy/redis';

/** `shard`: a sharded channel (SSUBSCRIBE), for a Redis Cluster connection. */
export type PubSubKind = 'channel' | 'pattern' | 'shard';
export type MessageHandler = (channel: string, message: string) => void;
export type Release = () => Promise<void>;

interface Entry {
  handler: MessageHandler;
  /** Set once the subscription round trip after registration came back; cleared on release. */
  armed: boolean;
}

interface Topic {
  kind: PubSubKind;
  name: string;
  entries: Set<Entry>;
  /** The tail of this name's SUBSCRIBE/UNSUBSCRIBE operations, which run one at a time. */
  ops: Promise<void>;
  /** Operations queued or running. */
  queued: number;
}

const shared = new WeakMap<RedisConnection, RedisPubSub>();

export class RedisPubSub {
  private readonly logger = new Logger(RedisPubSub.name);
  /** By kind, then name (no key built per message). */
  private readonly topics: Record<PubSubKind, Map<string, Topic>> = {
    channel: new Map(),
    pattern: new Map(),
    shard: new Map(),
  };
  private readonly resubscribedListeners = new Set<() => void>();
  private disconnected = false;

  /** The one instance for a connection (adapters sharing a subscriber connection must share its counts). */
  static of(connection: RedisConnection): RedisPubSub {
    let pubsub = shared.get(connection);
    if (!pubsub) {
      pubsub = new RedisPubSub(connection);
      shared.set(connection, pubsub);
    }
    return pubsub;
  }

  private constructor(private readonly connection: RedisConnection) {
    connection.on('message', (channel: string, message: string) =>
      this.route(this.topics.channel.get(channel), channel, message),
    );
    connection.on('smessage', (channel: string, message: string) =>
      this.route(this.topics.shard.get(channel), channel, message),
    );
    connection.on('pmessage', (pattern: string, channel: string, message: string) =>
      this.route(this.topics.pattern.get(pattern), channel, message),
    );
    connection.on('close', () => {
      this.disconnected = true;
    });
    connection.on('ready', () => {
      if (!this.disconnected) return;
      this.disconnected = false;
      void this.confirmResubscribed();
    });
  }

  /** Registers a handler for a channel or a pattern; resolves once it receives everything published from now. */
  async listen(kind: PubSubKind, name: string, handler: MessageHandler): Promise<Release> {
    const topics = this.topics[kind];
    let topic = topics.get(name);
    if (!topic) {
      topic = { kind, name, entries: new Set(), ops: Promise.resolve(), queued: 0 };
      topics.set(name, topic);
    }
    const entry: Entry = { handler, armed: false };
    topic.entries.add(entry);
    const subscribed = topic;
    try {
      await this.serialize(subscribed, () => this.subscribeTo(kind, [name]));
    } catch (error) {
      subscribed.entries.delete(entry);
      await this.unsubscribeIfUnused(subscribed);
      throw error;
    }
    if (subscribed.entries.has(entry)) entry.armed = true;
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      entry.armed = false;
      subscribed.entries.delete(entry);
      await this.unsubscribeIfUnused(subscribed);
    };
  }

  /** Calls `listener` each time the connection came back and its subscriptions are in place again. */
  onResubscribed(listener: () => void): () => void {
    this.resubscribedListeners.add(listener);
    return () => this.resubscribedListeners.delete(listener);
  }

  private async subscribeTo(kind: PubSubKind, names: string[]): Promise<void> {
    if (kind === 'channel') await this.connection.subscribe(...names);
    else if (kind === 'pattern') await this.connection.psubscribe(...names);
    // Sharded channels of different slots cannot share one SSUBSCRIBE.
    else await Promise.all(names.map((name) => this.connection.ssubscribe(name)));
  }

  private route(topic: Topic | undefined, channel: string, message: string): void {
    if (!topic) return;
    // The set itself, not a copy per message: an entry added meanwhile is not armed yet, and one released by an
    // earlier handler is disarmed (or gone, and skipped).
    for (const entry of topic.entries) {
      // Skips a handler released by an earlier one, and one whose subscription round trip is still under way.
      if (!entry.armed) continue;
      try {
        entry.handler(channel, message);
      } catch (error) {
        this.logger.error(`a message handler threw: ${String(error)}`);
      }
    }
  }

  private async unsubscribeIfUnused(topic: Topic): Promise<void> {
    if (topic.entries.size > 0) return;
    await this.serialize(topic, async () => {
      if (topic.entries.size > 0) return; // someone listened again meanwhile
      await (topic.kind === 'channel'
        ? this.connection.unsubscribe(topic.name)
        : topic.kind === 'pattern'
          ? this.connection.punsubscribe(topic.name)
          : this.connection.sunsubscribe(topic.name));
    }).catch((error: unknown) => {
      // The connection is gone (closed or failing): nothing is left to unsubscribe from.
      this.logger.debug(`unsubscribe from ${topic.name} failed: ${String(error)}`);
    });
  }

  /** Runs the operation after the earlier ones of the same name; forgets the name when nothing uses it. */
  private serialize(topic: Topic, operation: () => Promise<unknown>): Promise<void> {
    topic.queued += 1;
    const run = topic.ops.then(operation).then(() => undefined);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    topic.ops = settled.then(() => {
      topic.queued -= 1;
      const topics = this.topics[topic.kind];
      if (topic.queued === 0 && topic.entries.size === 0 && topics.get(topic.name) === topic) {
        topics.delete(topic.name);
      }
    });
    return run;
  }

  private async confirmResubscribed(): Promise<void> {
    const names: Record<PubSubKind, string[]> = { channel: [], pattern: [], shard: [] };
    for (const kind of ['channel', 'pattern', 'shard'] as const) {
      for (const topic of this.topics[kind].values())
        if (topic.entries.size > 0) names[kind].push(topic.name);
    }
    try {
      // ioredis has already sent its own resubscription; these replies come back after it, and confirm it.
      for (const kind of ['channel', 'pattern', 'shard'] as const) {
        if (names[kind].length > 0) await this.subscribeTo(kind, names[kind]);
      }
    } catch (error) {
      this.logger.warn(`resubscribing after a reconnect failed: ${String(error)}`);
      return;
    }
    for (const listener of [...this.resubscribedListeners]) {
      try {
        listener();
      } catch (error) {
        this.logger.error(`a resubscription listener threw: ${String(error)}`);
      }
    }
  }
}
