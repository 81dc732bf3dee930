// Request rate limits per credential (API key or user token) and per tenant, counted in fixed windows of a
// minute (@nestjs/throttler). Over a limit: 429 rate_limited with Retry-After. Embedded, the counts live in this
// process; distributed, in Redis (@nest-lab/throttler-storage-redis), so the limits hold for the whole deployment
// whichever api a request reaches; when Redis does not answer, each api counts alone for a while
// (FallbackThrottlerStorage) rather than failing the request.

import { Injectable, type ExecutionContext } from '@nestjs/common';
import {
  ThrottlerGuard,
  type ThrottlerLimitDetail,
  type ThrottlerModuleOptions,
  type ThrottlerStorage,
} from '@nestjs/throttler';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { CanopyException, type CanopyConfig } from '@canopy/common';
import { duplicateConnection, isCluster, type RedisConnections } from '@canopy/redis';
import type { Cluster } from 'ioredis';
import { credentialId, type Principal } from '@canopy/auth';
import { FallbackThrottlerStorage } from './fallback-throttler-storage';
import { WindowThrottlerStorage } from './window-throttler-storage';

const WINDOW_MS = 60_000;

@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  protected override throwThrottlingException(
    _ctx: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    throw new CanopyException('rate_limited', `too many requests: ${detail.limit} per minute`, {
      limit: detail.limit,
      retryAfterSeconds: detail.timeToBlockExpire,
    });
  }
}

function principalOf(req: Record<string, unknown>): Principal | undefined {
  return (req as { principal?: Principal }).principal;
}

export function rateLimitOptions(
  config: CanopyConfig,
  redis: RedisConnections | null,
): ThrottlerModuleOptions {
  const limited = budgets(config);
  return {
    ...(redis
      ? {
          // Its own connection (closed with the module; a Cluster's with the process); keys
          // `{<prefix>:<throttler>:<tracker>:...}:hits|blocked`, one hash tag per tracker.
          storage: new FallbackThrottlerStorage(
            isCluster(redis.redis)
              ? new ThrottlerStorageRedisService(duplicateConnection(redis.redis) as Cluster)
              : new ThrottlerStorageRedisService({ ...redis.redis.options }),
          ),
        }
      : { storage: new WindowThrottlerStorage() }),
    // Public routes (health, docs, metrics) and the admin are not limited, nor anything when no budget is set.
    skipIf: (ctx) => {
      if (limited.length === 0) return true;
      const p = principalOf(ctx.switchToHttp().getRequest<Record<string, unknown>>());
      return !p || p.kind === 'admin';
    },
    // One count per tracker across every route (the default would count each route apart).
    generateKey: (_ctx, tracker, name) => `${config.redis.prefix}:${name}:${tracker}`,
    throttlers: limited.map((b) => ({
      name: b.name,
      ttl: WINDOW_MS,
      limit: b.limit,
      getTracker: (req: Record<string, unknown>) => b.tracker(principalOf(req)!),
    })),
  };
}

/**
 * The request budgets: per credential and per tenant, each a count per minute. A budget set to 0 in the config is
 * unlimited and not counted at all.
 */
function budgets(config: CanopyConfig) {
  const all = [
    {
      name: 'credential',
      limit: config.limits.perKeyPerMinute,
      tracker: (p: Principal) => credentialId(p),
    },
    {
      name: 'tenant',
      limit: config.limits.perTenantPerMinute,
      tracker: (p: Principal) => (p.kind === 'admin' ? 'admin' : `tenant:${p.tenantId}`),
    },
  ];
  return all.filter((b) => b.limit > 0);
}

/**
 * Counts one request that did not come over HTTP (a WebSocket frame) against the same budgets, in the same
 * storage (so HTTP and WebSocket share one count); throws rate_limited over either. The admin is not limited.
 */
export async function chargeRequest(
  storage: ThrottlerStorage,
  config: CanopyConfig,
  principal: Principal,
): Promise<void> {
  if (principal.kind === 'admin') return;
  for (const b of budgets(config)) {
    const key = `${config.redis.prefix}:${b.name}:${b.tracker(principal)}`;
    const hit = await storage.increment(key, WINDOW_MS, b.limit, WINDOW_MS, b.name);
    if (hit.isBlocked) {
      throw new CanopyException('rate_limited', `too many requests: ${b.limit} per minute`, {
        limit: b.limit,
        retryAfterSeconds: hit.timeToBlockExpire,
      });
    }
  }
}
