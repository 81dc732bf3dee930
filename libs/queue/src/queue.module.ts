// The queue of a deployable, picked by the configuration: embedded (no REDIS_URL) the inline turn queue,
// in-process timers and run control; distributed (REDIS_URL) BullMQ and Redis run control on the process's Redis
// connections (@canopy/redis). Run control is closed at shutdown, after the modules above that use it.
// QueueModule.forRoot() is one module per process however many import it.

import {
  Inject,
  Injectable,
  Logger,
  Module,
  type DynamicModule,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { REDIS_CONNECTIONS, RedisModule, subscriberConnection, type RedisConnections } from '@canopy/redis';
import { BullmqTimers } from './bullmq-timers';
import { BullmqTurnQueue } from './bullmq-turn-queue';
import { InProcessTimers } from './in-process-timers';
import { InlineTurnQueue } from './inline-turn-queue';
import { InProcessRunControl, RUN_CONTROL, RedisRunControl, type RunControl } from './run-control';
import { TIMERS, type Timers } from './timers.port';
import { TURN_QUEUE, type TurnQueue } from './turn-queue.port';

@Injectable()
class QueueLifecycle implements OnApplicationShutdown {
  constructor(@Inject(RUN_CONTROL) private readonly control: RunControl) {}

  async onApplicationShutdown(): Promise<void> {
    await this.control.close();
  }
}

@Module({})
export class QueueModule {
  private static root: DynamicModule | null = null;

  static forRoot(): DynamicModule {
    QueueModule.root ??= {
      module: QueueModule,
      imports: [RedisModule.forRoot()],
      providers: [
        {
          provide: TURN_QUEUE,
          inject: [CANOPY_CONFIG, REDIS_CONNECTIONS],
          useFactory: (c: CanopyConfig, connections: RedisConnections | null): TurnQueue => {
            const logger = new Logger('TurnQueue');
            const onError = (err: unknown, job: unknown) =>
              logger.error({ err, job }, 'run failed unexpectedly');
            if (!connections) return new InlineTurnQueue(onError);
            return new BullmqTurnQueue({
              // BullMQ's blocking connections must never give up a command (and are not auto-pipelined).
              connection: connections.queueConnection(),
              prefix: `${c.redis.prefix}:bull`,
              concurrency: c.redis.workerConcurrency,
              lockDurationMs: c.redis.runLockMs,
              onError,
            });
          },
        },
        {
          provide: TIMERS,
          inject: [CANOPY_CONFIG, REDIS_CONNECTIONS],
          useFactory: (c: CanopyConfig, connections: RedisConnections | null): Timers => {
            const logger = new Logger('Timers');
            const onError = (err: unknown, timer: unknown) => logger.error({ err, timer }, 'timer failed');
            if (!connections) return new InProcessTimers(onError);
            return new BullmqTimers({
              connection: connections.queueConnection(),
              prefix: `${c.redis.prefix}:bull`,
              onError,
            });
          },
        },
        {
          provide: RUN_CONTROL,
          inject: [CANOPY_CONFIG, REDIS_CONNECTIONS],
          useFactory: (c: CanopyConfig, connections: RedisConnections | null): RunControl =>
            connections
              ? new RedisRunControl({
                  redis: connections.redis,
                  subscriber: subscriberConnection(connections.redis),
                  prefix: c.redis.prefix,
                  instanceId: c.instanceId,
                  onError: (err) => new Logger('RunControl').warn({ err }, 'run control connection error'),
                })
              : new InProcessRunControl(),
        },
        QueueLifecycle,
      ],
      exports: [TURN_QUEUE, TIMERS, RUN_CONTROL],
    };
    return QueueModule.root;
  }
}
