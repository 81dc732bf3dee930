// The realtime transport of a deployable, picked by the configuration: embedded (no REDIS_URL) the in-process bus,
// registry, feed and credential notices; distributed (REDIS_URL) their Redis adapters on the process's Redis
// connections (@canopy/redis), assembled as REDIS_REALTIME (null when embedded) and closed at shutdown. RealtimeModule.forRoot() is one module per process
// however many import it.

import {
  Inject,
  Injectable,
  Logger,
  Module,
  Optional,
  type DynamicModule,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { REDIS_CONNECTIONS, RedisModule, type RedisConnections } from '@canopy/redis';
import { InProcessActivityFeed } from './in-process/in-process-activity-feed';
import { InProcessCredentialNotices } from './in-process/in-process-credential-notices';
import { InProcessEventBus } from './in-process/in-process-event-bus';
import { InProcessLiveRegistry } from './in-process/in-process-live-registry';
import {
  ACTIVITY_FEED,
  CREDENTIAL_NOTICES,
  EVENT_BUS,
  LIVE_REGISTRY,
  type ActivityFeed,
  type CredentialNotices,
  type EventBus,
  type LiveRegistry,
} from './ports';
import { createRedisRealtime, type RedisRealtime } from './redis/redis-runtime';

/** The Redis adapters of a distributed deployment, or null when embedded. */
export const REDIS_REALTIME = Symbol('REDIS_REALTIME');

@Injectable()
class RealtimeLifecycle implements OnApplicationShutdown {
  constructor(@Optional() @Inject(REDIS_REALTIME) private readonly redis: RedisRealtime | null) {}

  // The modules above (the manager's live sessions, run control) close first: this module is imported by them;
  // the Redis connections close after (RedisModule is imported by this one).
  async onApplicationShutdown(): Promise<void> {
    await this.redis?.close();
  }
}

@Module({})
export class RealtimeModule {
  private static root: DynamicModule | null = null;

  static forRoot(): DynamicModule {
    RealtimeModule.root ??= {
      module: RealtimeModule,
      imports: [RedisModule.forRoot()],
      providers: [
        {
          provide: REDIS_REALTIME,
          inject: [CANOPY_CONFIG, REDIS_CONNECTIONS],
          useFactory: (c: CanopyConfig, connections: RedisConnections | null): RedisRealtime | null => {
            if (!connections) return null;
            const logger = new Logger('Redis');
            return createRedisRealtime(connections, {
              prefix: c.redis.prefix,
              replayLimit: c.sessions.replayLimit,
              replayTtlSeconds: c.redis.replayTtlSeconds,
              onError: (err) => logger.warn({ err }, 'redis error'),
            });
          },
        },
        {
          provide: EVENT_BUS,
          inject: [CANOPY_CONFIG, REDIS_REALTIME],
          useFactory: (c: CanopyConfig, redis: RedisRealtime | null): EventBus =>
            redis?.bus ??
            new InProcessEventBus({
              replayLimit: c.sessions.replayLimit,
              retainedEventsLimit: c.sessions.replayMemoryEvents,
              replayTtlMs: c.redis.replayTtlSeconds * 1000,
            }),
        },
        {
          provide: LIVE_REGISTRY,
          inject: [REDIS_REALTIME],
          useFactory: (redis: RedisRealtime | null): LiveRegistry =>
            redis?.registry ?? new InProcessLiveRegistry(),
        },
        {
          provide: ACTIVITY_FEED,
          inject: [REDIS_REALTIME],
          useFactory: (redis: RedisRealtime | null): ActivityFeed =>
            redis?.feed ?? new InProcessActivityFeed(),
        },
        {
          provide: CREDENTIAL_NOTICES,
          inject: [REDIS_REALTIME],
          useFactory: (redis: RedisRealtime | null): CredentialNotices =>
            redis?.notices ?? new InProcessCredentialNotices(),
        },
        RealtimeLifecycle,
      ],
      exports: [REDIS_REALTIME, EVENT_BUS, LIVE_REGISTRY, ACTIVITY_FEED, CREDENTIAL_NOTICES],
    };
    return RealtimeModule.root;
  }
}
