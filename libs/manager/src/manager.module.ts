// The manager layer of a deployable (the api and the worker both compose from it): the session engine assembled
// over SessionModule's ports (createSessionEngine), the population services (catalog, transfer, retention), and
// the processor's start and stop. At start-up the processor registers this process's handlers and ends what a
// previous stop left behind; at shutdown the manager stops runs (the grace period is RunDuties') and closes
// the live sessions here, before the infrastructure modules below close their connections.

import {
  Inject,
  Injectable,
  Logger,
  Module,
  Optional,
  type DynamicModule,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { ToolRegistry, AgentModule } from '@canopy/agent';
import { RUN_CONTROL, type RunControl } from '@canopy/queue';
import {
  ACTIVITY_FEED,
  EVENT_BUS,
  LIVE_REGISTRY,
  RealtimeModule,
  type ActivityFeed,
  type EventBus,
  type LiveRegistry,
} from '@canopy/realtime';
import { QueueModule } from '@canopy/queue';
import {
  EMBEDDED_DATABASE_SUPERVISOR,
  FilesModule,
  FilesService,
  HeavyOperationsRepository,
  SESSION_STORE,
  SessionCatalogStore,
  StoreModule,
  type EmbeddedDatabaseSupervisor,
  type SessionStore,
} from '@canopy/store';
import {
  AuditService,
  RetentionRepository,
  TENANT_RUNS,
  TenancyModule,
  TenantSettingsRepository,
} from '@canopy/tenancy';
import {
  SESSION_ENGINE_DEPS,
  SessionModule,
  RunDuties,
  SessionService,
  engineLogger,
  type EngineRole,
  type SessionEngineDeps,
} from '@canopy/session';
import {
  HeavyOperations,
  ImportConverter,
  RetentionSweeper,
  SessionCatalogService,
  SessionTransferService,
  TenantRunsCanceller,
} from './catalog';
import { createSessionEngine, type SessionEngine } from './session-engine';
import { SessionManager } from './session-manager.service';
import { TenantSettingsService } from './tenant-settings.service';

const SESSION_ENGINE = Symbol('SESSION_ENGINE');

@Injectable()
class ManagerLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('SessionEngine');
  private stopWatchingDatabase: (() => void) | null = null;

  constructor(
    @Inject(SESSION_ENGINE) private readonly engine: SessionEngine,
    @Optional()
    @Inject(EMBEDDED_DATABASE_SUPERVISOR)
    private readonly embedded: EmbeddedDatabaseSupervisor | null,
    private readonly converter: ImportConverter,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.engine.processor.register();
    const { interrupted, expiries } = await this.engine.duties.recover();
    if (interrupted > 0) this.logger.warn(`ended ${interrupted} run(s) interrupted by a previous stop`);
    if (expiries > 0) this.logger.log(`set the decision expiry of ${expiries} paused run(s)`);
    // The embedded database restarted: the runs its outage left without their end are ended as at start-up.
    this.stopWatchingDatabase =
      this.embedded?.onRestored(() => void this.engine.duties.recoverAfterDatabaseOutage()) ?? null;
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopWatchingDatabase?.();
    await this.engine.manager.shutdown();
    await this.converter.close();
  }
}

@Module({})
export class ManagerModule {
  private static readonly roots = new Map<EngineRole, DynamicModule>();

  static forRoot(role: EngineRole): DynamicModule {
    let root = ManagerModule.roots.get(role);
    if (!root) {
      root = ManagerModule.build(role);
      ManagerModule.roots.set(role, root);
    }
    return root;
  }

  private static build(role: EngineRole): DynamicModule {
    return {
      module: ManagerModule,
      imports: [
        SessionModule.forRoot(role),
        StoreModule.forRoot(),
        FilesModule.forRoot(),
        TenancyModule.forRoot(),
        RealtimeModule.forRoot(),
        QueueModule.forRoot(),
        AgentModule.forRoot(),
      ],
      providers: [
        {
          // The sweep runs where timers run (the embedded api, workers): the processor registers it there.
          provide: RetentionSweeper,
          inject: [
            CANOPY_CONFIG,
            RetentionRepository,
            ACTIVITY_FEED,
            EVENT_BUS,
            RUN_CONTROL,
            SessionCatalogStore,
          ],
          useFactory: (
            c: CanopyConfig,
            retention: RetentionRepository,
            feed: ActivityFeed,
            bus: EventBus,
            control: RunControl,
            catalog: SessionCatalogStore,
          ) =>
            new RetentionSweeper(
              retention,
              feed,
              bus,
              control,
              engineLogger(),
              c.sessions.retentionSweepBatch,
              catalog,
            ),
        },
        {
          provide: SESSION_ENGINE,
          inject: [SESSION_ENGINE_DEPS, RetentionSweeper],
          useFactory: (deps: SessionEngineDeps, retention: RetentionSweeper) =>
            createSessionEngine(deps, retention),
        },
        { provide: SessionService, inject: [SESSION_ENGINE], useFactory: (e: SessionEngine) => e.sessions },
        { provide: RunDuties, inject: [SESSION_ENGINE], useFactory: (e: SessionEngine) => e.duties },
        { provide: SessionManager, inject: [SESSION_ENGINE], useFactory: (e: SessionEngine) => e.manager },
        {
          provide: TenantSettingsService,
          inject: [SESSION_ENGINE_DEPS, TenantSettingsRepository],
          useFactory: (deps: SessionEngineDeps, settings: TenantSettingsRepository) =>
            new TenantSettingsService(deps, settings),
        },
        {
          provide: SessionCatalogService,
          inject: [
            SessionManager,
            SessionService,
            SessionCatalogStore,
            LIVE_REGISTRY,
            EVENT_BUS,
            RUN_CONTROL,
            HeavyOperations,
            AuditService,
          ],
          useFactory: (
            manager: SessionManager,
            sessions: SessionService,
            catalog: SessionCatalogStore,
            registry: LiveRegistry,
            bus: EventBus,
            control: RunControl,
            heavy: HeavyOperations,
            audit: AuditService,
          ) => new SessionCatalogService(manager, sessions, catalog, registry, bus, control, heavy, audit),
        },
        {
          provide: SessionTransferService,
          inject: [
            SESSION_STORE,
            SessionCatalogStore,
            LIVE_REGISTRY,
            ToolRegistry,
            ImportConverter,
            HeavyOperations,
            CANOPY_CONFIG,
            FilesService,
          ],
          useFactory: (
            store: SessionStore,
            catalog: SessionCatalogStore,
            registry: LiveRegistry,
            tools: ToolRegistry,
            converter: ImportConverter,
            heavy: HeavyOperations,
            c: CanopyConfig,
            files: FilesService,
          ) =>
            new SessionTransferService(store, catalog, registry, tools, converter, heavy, c.imports, files),
        },
        // The import thread: stopped with the service.
        { provide: ImportConverter, useFactory: () => new ImportConverter() },
        {
          provide: HeavyOperations,
          inject: [HeavyOperationsRepository, CANOPY_CONFIG],
          useFactory: (leases: HeavyOperationsRepository, c: CanopyConfig) =>
            new HeavyOperations(leases, {
              perTenant: c.imports.heavyOperationsPerTenant,
              batchPauseRatio: c.imports.batchPauseRatio,
            }),
        },
        {
          // The tenants feature's port: a disabled tenant's runs in flight are cancelled through the catalog.
          provide: TENANT_RUNS,
          inject: [SessionCatalogService],
          useFactory: (catalog: SessionCatalogService) => new TenantRunsCanceller(catalog),
        },
        ManagerLifecycle,
      ],
      exports: [
        TENANT_RUNS,
        SessionService,
        RunDuties,
        SessionManager,
        SessionCatalogService,
        SessionTransferService,
        RetentionSweeper,
        TenantSettingsService,
      ],
    };
  }
}
