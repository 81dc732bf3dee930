// The Redis connections of a deployable: distributed (REDIS_URL) one set per process (REDIS_CONNECTIONS), null when
// embedded; quit at shutdown, after the modules that use them (realtime, queue) have closed theirs.
// RedisModule.forRoot() is one module per process however many import it.

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
import { createRedisConnections, type RedisConnections } from './redis-connections';

/** The Redis connections of a distributed deployment, or null when embedded. */
export const REDIS_CONNECTIONS = Symbol('REDIS_CONNECTIONS');

@Injectable()
class RedisLifecycle implements OnApplicationShutdown {
  constructor(@Optional() @Inject(REDIS_CONNECTIONS) private readonly connections: RedisConnections | null) {}

  // The modules above (realtime's adapters, the queue) close first: this module is imported by them.
  async onApplicationShutdown(): Promise<void> {
    await this.connections?.close();
  }
}

@Module({})
export class RedisModule {
  private static root: DynamicModule | null = null;

  static forRoot(): DynamicModule {
    RedisModule.root ??= {
      module: RedisModule,
      providers: [
        {
          provide: REDIS_CONNECTIONS,
          inject: [CANOPY_CONFIG],
          useFactory: (c: CanopyConfig): RedisConnections | null => {
            if (!c.redis.url) return null;
            const logger = new Logger('Redis');
            return createRedisConnections({
              url: c.redis.url,
              clusterNodes: c.redis.clusterNodes,
              commandTimeoutMs: c.redis.commandTimeoutMs,
              onError: (err) => logger.warn({ err }, 'redis error'),
            });
          },
        },
        RedisLifecycle,
      ],
      exports: [REDIS_CONNECTIONS],
    };
    return RedisModule.root;
  }
}
