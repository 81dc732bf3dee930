// Wires the session engine for a deployable. The embedded runtime (no REDIS_URL) gets the in-process bus,
// registry and feed and the inline queue; tools and hooks are registries the app fills at start-up.

import {
  Global,
  Injectable,
  Logger,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import {
  DEFAULT_RETRY_POLICY,
  HookRegistry,
  MODEL_GATEWAY,
  ToolRegistry,
  createModelGateway,
  type ModelGateway,
} from '@canopy/agent';
import { InlineTurnQueue, InProcessRunControl, TURN_QUEUE, type TurnQueue } from '@canopy/queue';
import {
  ACTIVITY_FEED,
  EVENT_BUS,
  InProcessActivityFeed,
  InProcessEventBus,
  InProcessLiveRegistry,
  LIVE_REGISTRY,
  type ActivityFeed,
  type EventBus,
  type LiveRegistry,
} from '@canopy/realtime';
import { Database, PrismaSessionStore, SESSION_STORE, type SessionStore } from '@canopy/store';
import { SessionService } from './session.service';
import type { EngineLogger, SessionEngineDeps } from './session-deps';

@Injectable()
class SessionEngineLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('SessionEngine');

  constructor(private readonly sessions: SessionService) {}

  async onApplicationBootstrap(): Promise<void> {
    const recovered = await this.sessions.recoverInterruptedRuns();
    if (recovered > 0) this.logger.warn(`ended ${recovered} run(s) interrupted by a previous stop`);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.sessions.shutdown();
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
@Module({
  providers: [
    { provide: SESSION_STORE, inject: [Database], useFactory: (db: Database) => new PrismaSessionStore(db) },
    {
      provide: EVENT_BUS,
      inject: [CANOPY_CONFIG],
      useFactory: (c: CanopyConfig) => new InProcessEventBus({ replayLimit: c.sessions.replayLimit }),
    },
    { provide: LIVE_REGISTRY, useFactory: () => new InProcessLiveRegistry() },
    { provide: ACTIVITY_FEED, useFactory: () => new InProcessActivityFeed() },
    {
      provide: TURN_QUEUE,
      useFactory: () => {
        const logger = new Logger('TurnQueue');
        return new InlineTurnQueue((err, job) => logger.error({ err, ...job }, 'run failed unexpectedly'));
      },
    },
    {
      provide: MODEL_GATEWAY,
      inject: [CANOPY_CONFIG],
      useFactory: (c: CanopyConfig) => createModelGateway(c),
    },
    { provide: ToolRegistry, useFactory: () => new ToolRegistry() },
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
        MODEL_GATEWAY,
        ToolRegistry,
        HookRegistry,
      ],
      useFactory: (
        c: CanopyConfig,
        store: SessionStore,
        bus: EventBus,
        registry: LiveRegistry,
        feed: ActivityFeed,
        queue: TurnQueue,
        gateway: ModelGateway,
        tools: ToolRegistry,
        hooks: HookRegistry,
      ) => {
        const deps: SessionEngineDeps = {
          store,
          bus,
          registry,
          feed,
          queue,
          control: new InProcessRunControl(),
          gateway,
          tools,
          hooks,
          settings: {
            instanceId: c.instanceId,
            idleShutdownMs: c.sessions.idleShutdownMs,
            coalesceMs: c.sessions.coalesceMs,
            toolTimeoutMs: c.sessions.toolTimeoutMs,
            maxSteps: c.sessions.maxSteps,
            retry: DEFAULT_RETRY_POLICY,
            resultTtlMs: 10 * 60_000,
            maxBusyPerTenant: c.limits.concurrentRunsPerTenant,
            executesRuns: true,
          },
          logger: nestLogger(),
        };
        return new SessionService(deps);
      },
    },
    SessionEngineLifecycle,
  ],
  exports: [
    SessionService,
    ToolRegistry,
    HookRegistry,
    SESSION_STORE,
    EVENT_BUS,
    LIVE_REGISTRY,
    ACTIVITY_FEED,
    MODEL_GATEWAY,
  ],
})
export class SessionModule {}
