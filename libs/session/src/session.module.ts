// The session engine's parts for a deployable: what it is built from (SESSION_ENGINE_DEPS: the store, realtime,
// queue and agent modules' ports, quota admission and a tenant's provider keys, plus its settings), and where the
// webhook outbox (@canopy/tenancy's dispatcher) is sent: where runs execute. Each infrastructure module picks its
// embedded or distributed adapter from the configuration; only the role says whether this process executes runs:
// embedded, the api runs its own turns; distributed, only workers do (a worker needs REDIS_URL). The engine
// itself (the live sessions, the commands, the population) is assembled above, by ManagerModule.

import { Logger, Module, type DynamicModule } from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import {
  AgentModule,
  DEFAULT_RETRY_POLICY,
  HookRegistry,
  MODEL_GATEWAY,
  ToolRegistry,
  type ModelGateway,
} from '@canopy/agent';
import {
  QueueModule,
  RUN_CONTROL,
  TIMERS,
  TURN_QUEUE,
  type RunControl,
  type Timers,
  type TurnQueue,
} from '@canopy/queue';
import {
  ACTIVITY_FEED,
  EVENT_BUS,
  LIVE_REGISTRY,
  RealtimeModule,
  type ActivityFeed,
  type EventBus,
  type LiveRegistry,
} from '@canopy/realtime';
import { SESSION_STORE, StoreModule, type SessionStore } from '@canopy/store';
import {
  ProviderKeysRepository,
  QuotasRepository,
  TenancyModule,
  TenantSettingsRepository,
  WebhookDispatcher,
  WebhooksRepository,
} from '@canopy/tenancy';
import { SESSION_ENGINE_DEPS, type EngineLogger, type SessionEngineDeps } from './session-deps';
import { QuotaAdmission } from './quotas/quota-admission';

export type EngineRole = 'api' | 'worker';

/** The engine's logger, on Nest's. */
export function engineLogger(): EngineLogger {
  const logger = new Logger('SessionEngine');
  return {
    info: (message, context) => logger.log({ ...context }, message),
    warn: (message, context) => logger.warn({ ...context }, message),
    error: (message, context) => logger.error({ ...context }, message),
  };
}

@Module({})
export class SessionModule {
  private static readonly roots = new Map<EngineRole, DynamicModule>();

  static forRoot(role: EngineRole): DynamicModule {
    let root = SessionModule.roots.get(role);
    if (!root) {
      root = SessionModule.build(role);
      SessionModule.roots.set(role, root);
    }
    return root;
  }

  private static build(role: EngineRole): DynamicModule {
    return {
      module: SessionModule,
      imports: [
        StoreModule.forRoot(),
        TenancyModule.forRoot(),
        RealtimeModule.forRoot(),
        QueueModule.forRoot(),
        AgentModule.forRoot(),
      ],
      providers: [
        {
          provide: SESSION_ENGINE_DEPS,
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
            TenantSettingsRepository,
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
            tenantSettings: TenantSettingsRepository,
          ): SessionEngineDeps => {
            if (role === 'worker' && !c.redis.url) {
              throw new Error('a worker needs REDIS_URL (the distributed runtime)');
            }
            return {
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
                modelLimits: c.modelLimits,
                maxSteps: c.sessions.maxSteps,
                retry: DEFAULT_RETRY_POLICY,
                resultTtlMs: c.sessions.resultTtlMs,
                livePathNodes: c.sessions.livePathNodes,
                shutdownGraceMs: c.shutdownGraceMs,
                maxBusyPerTenant: c.limits.concurrentRunsPerTenant,
                retentionSweepMs: c.sessions.retentionSweepMs,
                // Distributed, a Redis that restarted empty loses queued jobs: workers queue such runs again.
                ...(c.redis.url ? { lostRunSweepMs: Math.max(1_000, c.redis.runLockMs) } : {}),
                // Embedded, the api runs its own turns; distributed, only workers do.
                executesRuns: queue.runsInline || role === 'worker',
              },
              logger: engineLogger(),
              admission: new QuotaAdmission(quotas),
              providerKeys,
              tenantDefaults: tenantSettings,
              tenantTelemetry: tenantSettings,
            };
          },
        },
        {
          // The webhook outbox is sent where runs execute: the embedded api, a distributed deployment's workers.
          provide: WebhookDispatcher,
          inject: [CANOPY_CONFIG, WebhooksRepository, TURN_QUEUE],
          useFactory: (c: CanopyConfig, repo: WebhooksRepository, queue: TurnQueue) =>
            new WebhookDispatcher(
              repo,
              {
                ...c.webhooks,
                targets: c.targets.webhooks,
                autoStart: queue.runsInline || role === 'worker',
              },
              engineLogger(),
            ),
        },
      ],
      exports: [SESSION_ENGINE_DEPS, WebhookDispatcher],
    };
  }
}
