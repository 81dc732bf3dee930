// The distributed runtime's ActivityFeed: Redis pub/sub, one channel per tenant, so a dashboard on any api instance
// sees the activity of sessions served anywhere.
//
// Channels (the tenant id percent-encoded):
//   <prefix>:activity:<tenant>   one message per event, the event as JSON
// A tenant's subscribers SUBSCRIBE to its channel; the all-tenants view (the admin's) PSUBSCRIBEs to
// `<prefix>:activity:*`. One PUBLISH per event serves both: Redis hands a message to channel and pattern subscribers
// in the same step, so both views see each tenant's events in publish order and the all-tenants view sees every
// event in the order Redis received it. A second all-tenants channel would double every publish (and need a
// script or MULTI to keep the two in step) to spare Redis one glob match per pattern subscriber per PUBLISH, which
// is cheap while few instances hold the all-tenants view.
//
// Delivery is at most once, like the in-process feed: events published while a subscriber connection is down are
// not replayed (ioredis resubscribes by itself); dashboards refresh from GET /v1/live.

import { Logger } from '@nestjs/common';
import type { ActivityEvent } from '@canopy/core';
import { subscriberConnection, publishInOrder, type RedisConnection } from '@canopy/redis';

import { callListener, logListenerError, type ListenerErrorHandler } from '../in-process/listener-errors';
import type { ActivityFeed, Unsubscribe } from '../ports';
import { checkNoKeyPrefix, checkPrefix, escapeGlob, keyPart } from './redis-keys';
import { RedisPubSub, type Release } from './redis-pubsub';

export interface RedisActivityFeedOptions {
  /** Publishes; owned by the caller (close() leaves it open). */
  redis: RedisConnection;
  /**
   * A connection for SUBSCRIBE only; several adapters may share one. Default: `redis.duplicate()`, opened on the
   * first subscribe and closed by close().
   */
  subscriber?: RedisConnection;
  /** Starts every channel name (no braces). */
  prefix: string;
  /** Where a throwing subscriber's error goes (default: an error log line). */
  onListenerError?: ListenerErrorHandler;
}

type Listener = (event: ActivityEvent) => void;

export class RedisActivityFeed implements ActivityFeed {
  private readonly logger = new Logger(RedisActivityFeed.name);
  private readonly redis: RedisConnection;
  private subscriber: RedisConnection | null;
  private ownsSubscriber = false;
  private pubsub: RedisPubSub | null = null;
  private readonly prefix: string;
  private readonly onListenerError: ListenerErrorHandler;
  private readonly releases = new Set<Release>();
  private closed = false;

  constructor(options: RedisActivityFeedOptions) {
    checkNoKeyPrefix(options.redis);
    this.redis = options.redis;
    this.subscriber = options.subscriber ?? null;
    this.prefix = checkPrefix(options.prefix);
    this.onListenerError = options.onListenerError ?? logListenerError(RedisActivityFeed.name);
  }

  async publish(event: ActivityEvent): Promise<void> {
    if (this.closed) throw closedError();
    await publishInOrder(this.redis, this.channel(event.tenantId), JSON.stringify(event));
  }

  async subscribe(tenantId: string | null, listener: Listener): Promise<Unsubscribe> {
    if (this.closed) throw closedError();
    const onMessage = (_channel: string, message: string) => {
      let event: ActivityEvent;
      try {
        event = JSON.parse(message) as ActivityEvent;
      } catch (error) {
        this.logger.error(`undecodable activity message: ${String(error)}`);
        return;
      }
      callListener(listener, event, this.onListenerError);
    };
    const release =
      tenantId === null
        ? await this.pubSub().listen('pattern', `${escapeGlob(this.prefix)}:activity:*`, onMessage)
        : await this.pubSub().listen('channel', this.channel(tenantId), onMessage);
    if (this.closed) {
      await release();
      throw closedError();
    }
    this.releases.add(release);
    return async () => {
      this.releases.delete(release);
      await release();
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const releases = [...this.releases];
    this.releases.clear();
    await Promise.all(releases.map((release) => release()));
    if (this.ownsSubscriber && this.subscriber) {
      try {
        await this.subscriber.quit();
      } catch {
        this.subscriber.disconnect();
      }
    }
  }

  private channel(tenantId: string): string {
    return `${this.prefix}:activity:${keyPart(tenantId)}`;
  }

  private pubSub(): RedisPubSub {
    if (!this.pubsub) {
      if (!this.subscriber) {
        this.subscriber = subscriberConnection(this.redis);
        this.ownsSubscriber = true;
        this.subscriber.on('error', (error: Error) =>
          this.logger.warn(`subscriber connection: ${error.message}`),
        );
      }
      this.pubsub = RedisPubSub.of(this.subscriber);
    }
    return this.pubsub;
  }
}

function closedError(): Error {
  return new Error('RedisActivityFeed is closed');
}
