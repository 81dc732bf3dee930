// The store of a deployable: opens the database (the configured Postgres, or the embedded PGlite when DATABASE_URL
// is unset, with the supervisor that restarts it), applies pending migrations when configured to, provides the
// session store and the repositories of the sessions' catalog over it, and closes everything on shutdown. Imported
// by each module that needs it (StoreModule.forRoot() is one module per process however many import it).

import {
  Inject,
  Injectable,
  Logger,
  Module,
  type DynamicModule,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { Database } from './database';
import { PostgresSessionStore } from './postgres-session.store';
import { HeavyOperationsRepository } from './heavy-operations.repository';
import { SessionCatalogStore } from './session-catalog.store';
import { SESSION_STORE } from './session-store.port';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres';
import { EmbeddedDatabaseSupervisor } from './embedded-supervisor';
import { applyMigrations } from './migrator';
import { TableMaintenance } from './table-maintenance';

export interface DatabaseHandle {
  readonly database: Database;
  readonly embedded: EmbeddedPostgres | null;
  /** Restarts the embedded database when its thread dies or stops answering; null on an external Postgres. */
  readonly supervisor: EmbeddedDatabaseSupervisor | null;
  /** Keeps table statistics current; null when turned off (DATABASE_UPKEEP_INTERVAL_MS=0). */
  readonly maintenance: TableMaintenance | null;
  close(): Promise<void>;
}

export async function openDatabase(config: CanopyConfig, logger: Logger): Promise<DatabaseHandle> {
  const embedded = config.database.url ? null : await startEmbeddedPostgres(config.database.dataDir);
  try {
    const url = config.database.url ?? embedded!.url;
    if (embedded) logger.log(`embedded database (PGlite) in ${embedded.dataDir}`);
    if (config.database.migrateOnBoot) {
      const { applied, adopted } = await applyMigrations({
        url,
        migrationsDir: config.database.migrationsDir,
        log: (m) => logger.debug(m),
      });
      if (adopted.length) {
        logger.log(
          `the database was built by the ${adopted.length} migrations the baseline replaced: recorded as the baseline`,
        );
      }
      logger.log(
        applied.length ? `applied migrations: ${applied.join(', ')}` : 'database schema is up to date',
      );
    }
    const database = new Database({
      url,
      // PGlite is a single Postgres session: one connection, or transactions would interleave.
      poolMax: embedded ? 1 : config.database.poolMax,
      // ... whose statements of the hot path are pipelined on it, not sent one round trip at a time.
      pipelineCalls: embedded !== null,
      // PGlite cannot bound a statement, and its idle-in-transaction timeout wedges it (see DatabaseOptions).
      serverTimeouts: embedded === null,
      txMaxWaitMs: config.database.txMaxWaitMs,
      txTimeoutMs: config.database.txTimeoutMs,
    });
    await database.ping();
    const maintenance =
      config.database.upkeepIntervalMs > 0
        ? new TableMaintenance(database, {
            vacuum: embedded !== null,
            intervalMs: config.database.upkeepIntervalMs,
            log: (m) => logger.debug(m),
            onError: (err) => logger.warn({ err }, 'table upkeep failed'),
          })
        : null;
    const supervisor = embedded
      ? new EmbeddedDatabaseSupervisor(embedded, database, {
          livenessMs: config.database.embeddedLivenessMs,
          recoveryMs: config.database.embeddedRecoveryMs,
          log: {
            info: (m) => logger.log(m),
            warn: (m) => logger.warn(m),
            error: (m) => logger.error(m),
          },
        })
      : null;
    return {
      database,
      embedded,
      supervisor,
      maintenance,
      async close() {
        await supervisor?.stop();
        await maintenance?.stop();
        await database.disconnect();
        await embedded?.stop();
      },
    };
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
}

const DATABASE_HANDLE = Symbol('DATABASE_HANDLE');

/** The embedded database's supervisor (EmbeddedDatabaseSupervisor), null on an external Postgres. */
export const EMBEDDED_DATABASE_SUPERVISOR = Symbol('EMBEDDED_DATABASE_SUPERVISOR');

@Injectable()
class DatabaseLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(@Inject(DATABASE_HANDLE) private readonly handle: DatabaseHandle) {}

  onApplicationBootstrap(): void {
    this.handle.maintenance?.start();
    this.handle.supervisor?.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.handle.close();
  }
}

/** A repository built over the database alone. */
function repository<T>(type: new (db: Database) => T) {
  return { provide: type, inject: [Database], useFactory: (db: Database) => new type(db) };
}

@Module({})
export class StoreModule {
  private static root: DynamicModule | null = null;

  static forRoot(): DynamicModule {
    StoreModule.root ??= {
      module: StoreModule,
      providers: [
        {
          provide: DATABASE_HANDLE,
          inject: [CANOPY_CONFIG],
          useFactory: (config: CanopyConfig) => openDatabase(config, new Logger('Database')),
        },
        { provide: Database, inject: [DATABASE_HANDLE], useFactory: (h: DatabaseHandle) => h.database },
        {
          provide: EMBEDDED_DATABASE_SUPERVISOR,
          inject: [DATABASE_HANDLE],
          useFactory: (h: DatabaseHandle) => h.supervisor,
        },
        DatabaseLifecycle,
        {
          provide: SESSION_STORE,
          inject: [Database],
          useFactory: (db: Database) => new PostgresSessionStore(db),
        },
        repository(SessionCatalogStore),
        repository(HeavyOperationsRepository),
      ],
      exports: [
        Database,
        EMBEDDED_DATABASE_SUPERVISOR,
        SESSION_STORE,
        SessionCatalogStore,
        HeavyOperationsRepository,
      ],
    };
    return StoreModule.root;
  }
}
