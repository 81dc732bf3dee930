// The distributed runtime's CredentialNotices: Redis pub/sub on one channel, `<prefix>:credentials`, one message
// per notice (the notice as JSON), heard by every api process, the publisher's own included.
//
// Pub/sub delivers at most once: a notice published while a subscriber connection is down is lost. So once the
// connection is back and resubscribed, subscribers are told (`onMissed`) and check what they hold again.

import { Logger } from '@nestjs/common';

import { callListener, logListenerError, type ListenerErrorHandler } from '../in-process/listener-errors';
import type { CredentialNotice, CredentialNotices, Unsubscribe } from '../ports';
import { subscriberConnection, publishInOrder, type RedisConnection } from '@canopy/redis';
import { checkNoKeyPrefix, checkPrefix } from './redis-keys';
import { RedisPubSub, type Release } from './redis-pubsub';

export interface RedisCredentialNoticesOptions {
  /** Publishes; owned by the caller (close() leaves it open). */
  redis: RedisConnection;
  /**
   * A connection for SUBSCRIBE only; several adapters may share one. Default: `redis.duplicate()`, opened on the
   * first subscribe and closed by close().
   */
  subscriber?: RedisConnection;
  /** Starts the channel name (no braces). */
  prefix: string;
  /** Where a throwing subscriber's error goes (default: an error log line). */
  onListenerError?: ListenerErrorHandler;
}

type Listener = (notice: CredentialNotice) => void;

export class RedisCredentialNotices implements CredentialNotices {
  private readonly logger = new Logger(RedisCredentialNotices.name);
  private readonly redis: RedisConnection;
  private subscriber: RedisConnection | null;
  private ownsSubscriber = false;
  private pubsub: RedisPubSub | null = null;
  private readonly channel: string;
  private readonly onListenerError: ListenerErrorHandler;
  private readonly releases = new Set<Release>();
  private closed = false;

  constructor(options: RedisCredentialNoticesOptions) {
    checkNoKeyPrefix(options.redis);
    this.redis = options.redis;
    this.subscriber = options.subscriber ?? null;
    this.channel = `${checkPrefix(options.prefix)}:credentials`;
    this.onListenerError = options.onListenerError ?? logListenerError(RedisCredentialNotices.name);
  }

  async publish(notice: CredentialNotice): Promise<void> {
    if (this.closed) throw closedError();
    await publishInOrder(this.redis, this.channel, JSON.stringify(notice));
  }

  async subscribe(listener: Listener, onMissed?: () => void): Promise<Unsubscribe> {
    if (this.closed) throw closedError();
    const pubsub = this.pubSub();
    const stopMissed = onMissed
      ? pubsub.onResubscribed(() => callListener(onMissed, undefined, this.onListenerError))
      : () => undefined;
    let listening: Release;
    try {
      listening = await pubsub.listen('channel', this.channel, (_channel, message) => {
        const notice = parseNotice(message);
        if (notice) callListener(listener, notice, this.onListenerError);
        else this.logger.error(`undecodable credential notice: ${message.slice(0, 200)}`);
      });
    } catch (error) {
      stopMissed();
      throw error;
    }
    const release: Release = async () => {
      stopMissed();
      await listening();
    };
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

/** A notice as published, or null for anything else on the channel. */
function parseNotice(message: string): CredentialNotice | null {
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { type, tenantId, keyId } = value as Record<string, unknown>;
  if (typeof tenantId !== 'string') return null;
  if (type === 'key_revoked') return typeof keyId === 'string' ? { type, tenantId, keyId } : null;
  if (type === 'tenant_disabled' || type === 'tenant_enabled') return { type, tenantId };
  return null;
}

function closedError(): Error {
  return new Error('RedisCredentialNotices is closed');
}
