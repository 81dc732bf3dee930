// Rate-limit counts when Redis is away. Distributed, the counts live in Redis; a request must not wait for (or
// fail with) a Redis that does not answer, so each count is given a short deadline, and on failure this process
// counts on its own (the limits then hold per api instance instead of for the deployment) until Redis answers
// again: it is tried again every FALLBACK_RETRY_MS. Nothing is let through uncounted.

import { Logger, type OnApplicationShutdown, type OnModuleDestroy } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { WindowThrottlerStorage } from './window-throttler-storage';

type StorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/** How long a count may wait for Redis before this process counts it alone. */
export const RATE_LIMIT_REDIS_DEADLINE_MS = 250;
/** How long the process counts alone after Redis failed, before it tries Redis again. */
export const FALLBACK_RETRY_MS = 5_000;

export class FallbackThrottlerStorage implements ThrottlerStorage, OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger('RateLimit');
  private readonly local: WindowThrottlerStorage;
  private localUntil = 0;

  constructor(
    private readonly primary: ThrottlerStorage & Partial<OnModuleDestroy>,
    private readonly now: () => number = Date.now,
    private readonly deadlineMs = RATE_LIMIT_REDIS_DEADLINE_MS,
  ) {
    this.local = new WindowThrottlerStorage(now);
  }

  /** True while counts are kept in this process (Redis failed recently). */
  get degraded(): boolean {
    return this.now() < this.localUntil;
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<StorageRecord> {
    if (!this.degraded) {
      try {
        return await withDeadline(
          this.primary.increment(key, ttl, limit, blockDuration, throttlerName),
          this.deadlineMs,
        );
      } catch (err) {
        this.localUntil = this.now() + FALLBACK_RETRY_MS;
        this.logger.warn(
          { err },
          `rate limits counted in this process for ${FALLBACK_RETRY_MS} ms: Redis did not answer`,
        );
      }
    }
    return this.local.increment(key, ttl, limit, blockDuration, throttlerName);
  }

  onModuleDestroy(): void {
    this.primary.onModuleDestroy?.();
  }

  onApplicationShutdown(): void {
    this.local.clear();
  }
}

async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
