// Wires the session engine for a deployable. Embedded (no REDIS_URL): the in-process bus, registry and feed and
// the inline queue, and the api executes runs itself. Distributed (REDIS_URL): Redis adapters and BullMQ; the api
// only enqueues and serves live sessions, workers execute runs. Tools and hooks are registries the app fills at
// start-up. Only this module knows which runtime it is; the engine sees ports.

import {
  DynamicModule,
  Global,
  Inject,
  Injectable,
  Logger,
  Module,
  Optional,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import {
  DEFAULT_RETRY_POLICY,
  HookRegistry,
  MODEL_GATEWAY,
  TenantCredentialsGateway,
  ToolRegistry,
  createModelGateway,
  registerDemoTools,
  type ModelGateway,
} from '@canopy/agent';
import {
  BullmqTimers,
  BullmqTurnQueue,
  InProcessRunControl,
  InProcessTimers,
  InlineTurnQueue,
  RUN_CONTROL,
  RedisRunControl,
  TIMERS,
  TURN_QUEUE,
  type RunControl,
  type Timers,
  type TurnQueue,
} from '@canopy/queue';
import {
  ACTIVITY_FEED,
  EVENT_BUS,
  InProcessActivityFeed,
  InProcessEventBus,
  InProcessLiveRegistry,
  LIVE_REGISTRY,
  createRedisRealtime,
  duplicateConnection,
  type ActivityFeed,
  type EventBus,
  type LiveRegistry,
  type RedisRealtime,
} from '@canopy/realtime';
import {
  Database,
  PostgresSessionStore,
  RetentionRepository,
  SESSION_STORE,
  SessionCatalogStore,
  ProviderKeysRepository,
  QuotasRepository,
  SecretBox,
  WebhooksRepository,
  resolveEncryptionKey,
  type SessionStore,
} from '@canopy/store';
import { RetentionSweeper, SessionCatalogService, SessionTransferService } from './catalog';
import { SessionService } from './session.service';
import type { EngineLogger, SessionEngineDeps } from './session-deps';
import { WebhookDispatcher } from './webhooks';
import { QuotaAdmission } from './quotas/quota-admission';

/** The Redis runtime of a distributed deployment, or null when embedded. */
export const REDIS_REALTIME = Symbol('REDIS_REALTIME');

export type EngineRole = 'api' | 'worker';

@Injectable()
class SessionEngineLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('SessionEngine');

  constructor(
    private readonly sessions: SessionService,
    @Inject(RUN_CONTROL) private readonly control: RunControl,
    @Optional() @Inject(REDIS_REALTIME) private readonly redis: RedisRealtime | null,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { interrupted, expiries } = await this.sessions.recover();
    if (interrupted > 0) this.logger.warn(`ended ${interrupted} run(s) interrupted by a previous stop`);
    if (expiries > 0) this.logger.log(`set the decision expiry of ${expiries} paused run(s)`);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.sessions.shutdown();
    await this.control.close();
    await this.redis?.close();
  }
}

function nestLogger(): EngineLogger {
  const logger = new Logger('SessionEngine');
  return {
    warn: (message, context) => logger.warn({ ...context }, message),
    error: (message, context) => logger.error({ ...context }, message),
  };
}

@Global()
@Module({})
export class SessionModule {
  static forRoot(role: EngineRole): DynamicModule {
    return {
      module: SessionModule,
      providers: [
        {
          provide: SESSION_STORE,
          inject: [Database],
          useFactory: (db: Database) => new PostgresSessionStore(db),
        },
        {
          provide: REDIS_REALTIME,
          inject: [CANOPY_CONFIG],
          useFactory: (c: CanopyConfig): RedisRealtime | null => {
            if (!c.redis.url) {
              if (role === 'worker') throw new Error('a worker needs REDIS_URL (the distributed runtime)');
              return null;
            }
            const logger = new Logger('Redis');
            return createRedisRealtime({
              url: c.redis.url,
              clusterNodes: c.redis.clusterNodes,
              prefix: c.redis.prefix,
              replayLimit: c.sessions.replayLimit,
              replayTtlSeconds: c.redis.replayTtlSeconds,
              commandTimeoutMs: c.redis.commandTimeoutMs,
              onError: (err) => logger.warn({ err }, 'redis error'),
            });
          },
        },
        {
          provide: EVENT_BUS,
          inject: [CANOPY_CONFIG, REDIS_REALTIME],
          useFactory: (c: CanopyConfig, redis: RedisRealtime | null): EventBus =>
            redis?.bus ?? new InProcessEventBus({ replayLimit: c.sessions.replayLimit }),
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
          provide: TURN_QUEUE,
          inject: [CANOPY_CONFIG, REDIS_REALTIME],
          useFactory: (c: CanopyConfig, redis: RedisRealtime | null): TurnQueue => {
            const logger = new Logger('TurnQueue');
            const onError = (err: unknown, job: unknown) =>
              logger.error({ err, job }, 'run failed unexpectedly');
            if (!redis) return new InlineTurnQueue(onError);
            return new BullmqTurnQueue({
              // BullMQ's blocking connections must never give up a command (and are not auto-pipelined).
              connection: redis.queueConnection(),
              prefix: `${c.redis.prefix}:bull`,
              concurrency: c.redis.workerConcurrency,
              lockDurationMs: c.redis.runLockMs,
              onError,
            });
          },
        },
        {
          provide: TIMERS,
          inject: [CANOPY_CONFIG, REDIS_REALTIME],
          useFactory: (c: CanopyConfig, redis: RedisRealtime | null): Timers => {
            const logger = new Logger('Timers');
            const onError = (err: unknown, timer: unknown) => logger.error({ err, timer }, 'timer failed');
            if (!redis) return new InProcessTimers(onError);
            return new BullmqTimers({
              connection: redis.queueConnection(),
              prefix: `${c.redis.prefix}:bull`,
              onError,
            });
          },
        },
        {
          provide: RUN_CONTROL,
          inject: [CANOPY_CONFIG, REDIS_REALTIME],
          useFactory: (c: CanopyConfig, redis: RedisRealtime | null): RunControl =>
            redis
              ? new RedisRunControl({
                  redis: redis.redis,
                  subscriber: duplicateConnection(redis.redis, { enableAutoPipelining: false }),
                  prefix: c.redis.prefix,
                  instanceId: c.instanceId,
                })
              : new InProcessRunControl(),
        },
        {
          // Provider keys a tenant brought (sealed under the deployment's encryption key).
          provide: ProviderKeysRepository,
          inject: [CANOPY_CONFIG, Database],
          useFactory: (c: CanopyConfig, db: Database) => {
            const resolved = resolveEncryptionKey(c);
            return new ProviderKeysRepository(db, resolved ? new SecretBox(resolved.key) : null);
          },
        },
        {
          provide: MODEL_GATEWAY,
          inject: [CANOPY_CONFIG, ProviderKeysRepository],
          useFactory: (c: CanopyConfig, keys: ProviderKeysRepository) =>
            new TenantCredentialsGateway(createModelGateway(c), keys),
        },
        {
          provide: ToolRegistry,
          inject: [CANOPY_CONFIG],
          // The demo tools (clock, calculator, deploy) let every tenant try server tools with no code.
          useFactory: (c: CanopyConfig) =>
            c.demoTools ? registerDemoTools(new ToolRegistry()) : new ToolRegistry(),
        },
        {
          provide: HookRegistry,
          useFactory: () => new HookRegistry({ parallelTimeoutMs: 5_000, injectionBudgetTokens: 4_000 }),
        },
        {
          provide: SessionService,
          inject: [
            CANOPY_CONFIG,
            SESSION_STORE,
            EVENT_BUS,
            LIVE_REGISTRY,
            ACTIVITY_FEED,
            TURN_QUEUE,
            RUN_CONTROL,
            TIMERS,
            MODEL_GATEWAY,
            ToolRegistry,
            HookRegistry,
            QuotasRepository,
            ProviderKeysRepository,
          ],
          useFactory: (
            c: CanopyConfig,
            store: SessionStore,
            bus: EventBus,
            registry: LiveRegistry,
            feed: ActivityFeed,
            queue: TurnQueue,
            control: RunControl,
            timers: Timers,
            gateway: ModelGateway,
            tools: ToolRegistry,
            hooks: HookRegistry,
            quotas: QuotasRepository,
            providerKeys: ProviderKeysRepository,
          ) => {
            const deps: SessionEngineDeps = {
              store,
              bus,
              registry,
              feed,
              queue,
              control,
              timers,
              gateway,
              tools,
              hooks,
              settings: {
                instanceId: c.instanceId,
                idleShutdownMs: c.sessions.idleShutdownMs,
                decisionTimeoutMs: c.sessions.decisionTimeoutMs,
                coalesceMs: c.sessions.coalesceMs,
                toolTimeoutMs: c.sessions.toolTimeoutMs,
                maxSteps: c.sessions.maxSteps,
                retry: DEFAULT_RETRY_POLICY,
                resultTtlMs: 10 * 60_000,
                shutdownGraceMs: c.shutdownGraceMs,
                maxBusyPerTenant: c.limits.concurrentRunsPerTenant,
                retentionSweepMs: c.sessions.retentionSweepMs,
                // Distributed, a Redis that restarted empty loses queued jobs: workers queue such runs again.
                ...(c.redis.url ? { lostRunSweepMs: Math.max(1_000, c.redis.runLockMs) } : {}),
                // Embedded, the api runs its own turns; distributed, only workers do.
                executesRuns: queue.runsInline || role === 'worker',
              },
              logger: nestLogger(),
              admission: new QuotaAdmission(quotas),
              providerKeys,
            };
            return new SessionService(deps);
          },
        },
        {
          provide: SessionCatalogStore,
          inject: [Database],
          useFactory: (db: Database) => new SessionCatalogStore(db),
        },
        {
          provide: RetentionRepository,
          inject: [Database],
          useFactory: (db: Database) => new RetentionRepository(db),
        },
        {
          provide: SessionCatalogService,
          inject: [SessionService, SessionCatalogStore, LIVE_REGISTRY, EVENT_BUS, RUN_CONTROL],
          useFactory: (
            sessions: SessionService,
            catalog: SessionCatalogStore,
            registry: LiveRegistry,
            bus: EventBus,
            control: RunControl,
          ) => new SessionCatalogService(sessions, catalog, registry, bus, control),
        },
        {
          provide: SessionTransferService,
          inject: [SESSION_STORE, SessionCatalogStore, LIVE_REGISTRY, ToolRegistry],
          useFactory: (
            store: SessionStore,
            catalog: SessionCatalogStore,
            registry: LiveRegistry,
            tools: ToolRegistry,
          ) => new SessionTransferService(store, catalog, registry, tools),
        },
        {
          // The sweep runs where timers run (the embedded api, workers); the service registers it there.
          provide: RetentionSweeper,
          inject: [CANOPY_CONFIG, SessionService, RetentionRepository, ACTIVITY_FEED, EVENT_BUS, RUN_CONTROL],
          useFactory: (
            c: CanopyConfig,
            sessions: SessionService,
            retention: RetentionRepository,
            feed: ActivityFeed,
            bus: EventBus,
            control: RunControl,
          ) => {
            const sweeper = new RetentionSweeper(
              retention,
              feed,
              bus,
              control,
              nestLogger(),
              c.sessions.retentionSweepBatch,
            );
            sessions.setRetentionSweeper(async () => {
              await sweeper.sweep();
            });
            return sweeper;
          },
        },
        {
          provide: QuotasRepository,
          inject: [Database],
          useFactory: (db: Database) => new QuotasRepository(db),
        },
        {
          provide: WebhooksRepository,
          inject: [Database],
          useFactory: (db: Database) => new WebhooksRepository(db),
        },
        {
          // The webhook outbox is sent where runs execute: the embedded api, a distributed deployment's workers.
          provide: WebhookDispatcher,
          inject: [CANOPY_CONFIG, WebhooksRepository, TURN_QUEUE],
          useFactory: (c: CanopyConfig, repo: WebhooksRepository, queue: TurnQueue) =>
            new WebhookDispatcher(
              repo,
              { ...c.webhooks, autoStart: queue.runsInline || role === 'worker' },
              nestLogger(),
            ),
        },
        SessionEngineLifecycle,
      ],
      exports: [
        ProviderKeysRepository,
        QuotasRepository,
        WebhooksRepository,
        WebhookDispatcher,
        SessionService,
        SessionCatalogService,
        SessionTransferService,
        RetentionRepository,
        RetentionSweeper,
        ToolRegistry,
        HookRegistry,
        SESSION_STORE,
        EVENT_BUS,
        LIVE_REGISTRY,
        ACTIVITY_FEED,
        MODEL_GATEWAY,
        REDIS_REALTIME,
      ],
    };
  }
}
