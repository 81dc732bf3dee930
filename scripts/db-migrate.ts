// `npm run db:migrate`: applies pending migrations to DATABASE_URL (or to the embedded database when unset).
// The api also does this at boot unless CANOPY_MIGRATE_ON_BOOT=false.

import { loadConfig } from '@canopy/common';
import { applyMigrations, startEmbeddedPostgres } from '@canopy/store';

async function migrate(): Promise<void> {
  const config = loadConfig(process.env);
  const embedded = config.database.url ? null : await startEmbeddedPostgres(config.database.dataDir);
  try {
    const { applied } = await applyMigrations({
      url: config.database.url ?? embedded!.url,
      migrationsDir: config.database.migrationsDir,
    });
    process.stdout.write(
      applied.length ? `applied: ${applied.join(', ')}\n` : 'the database schema is up to date\n',
    );
  } finally {
    await embedded?.stop();
  }
}

migrate().catch((err: unknown) => {
  process.stderr.write(`db:migrate failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
