// Opens the database for a deployable: the configured Postgres, or the embedded PGlite when DATABASE_URL is
// unset; applies pending migrations when configured to; closes everything on shutdown.

import {
  Global,
  Inject,
  Injectable,
  Logger,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { Database } from './database';
import { RunStatsRepository } from './run-stats';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres';
import { applyMigrations } from './migrator';
import { TableMaintenance } from './table-maintenance';

export interface DatabaseHandle {
  readonly database: Database;
  readonly embedded: EmbeddedPostgres | null;
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
      const { applied } = await applyMigrations({
        url,
        migrationsDir: config.database.migrationsDir,
        log: (m) => logger.debug(m),
      });
      logger.log(
        applied.length ? `applied migrations: ${applied.join(', ')}` : 'database schema is up to date',
      );
    }
    const database = new Database({
      url,
      // PGlite is a single Postgres session: one connection, or transactions would interleave.
      poolMax: embedded ? 1 : config.database.poolMax,
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
    return {
      database,
      embedded,
      maintenance,
      async close() {
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

@Injectable()
class DatabaseLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(@Inject(DATABASE_HANDLE) private readonly handle: DatabaseHandle) {}

  onApplicationBootstrap(): void {
    this.handle.maintenance?.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.handle.close();
  }
}

@Global()
@Module({
  providers: [
    {
      provide: DATABASE_HANDLE,
      inject: [CANOPY_CONFIG],
      useFactory: (config: CanopyConfig) => openDatabase(config, new Logger('Database')),
    },
    { provide: Database, inject: [DATABASE_HANDLE], useFactory: (h: DatabaseHandle) => h.database },
    DatabaseLifecycle,
    RunStatsRepository,
  ],
  exports: [Database, RunStatsRepository],
})
export class DatabaseModule {}
