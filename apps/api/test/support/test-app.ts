// Boots the real api (same factory as main.ts) on a free loopback port, against a database of its own on the
// machine's Postgres, or against the embedded PGlite when asked. Tests then speak HTTP to it like any client.
// An embedded database starts from a copy of one made once per test run (initialised and migrated by a first
// boot), as Postgres test databases start from a template: a first boot costs seconds of CPU, a copy a tenth of one.

import { cpSync, existsSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { isProcessAlive, loadConfig, type CanopyConfig } from '@canopy/common';
import { createTestDatabase, TEST_ADMIN_KEY, TEST_JWT_SECRET, type TestDatabase } from '@canopy/testing';
import { createApiApp } from '../../src/app.factory';

export { TEST_ADMIN_KEY };

/** The deployment encryption key of test apps (32 bytes, hex). */
export const TEST_ENCRYPTION_KEY = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';

export interface TestApp {
  readonly url: string;
  readonly config: CanopyConfig;
  readonly app: NestExpressApplication;
  readonly database: TestDatabase | null;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Extra environment, as a deployment would set it. */
  env?: Record<string, string>;
  /**
   * Use the embedded PGlite in this data directory instead of a Postgres test database. An empty one starts from a
   * copy of the run's migrated embedded database, unless freshEmbedded.
   */
  embeddedDataDir?: string;
  /** Let an empty embeddedDataDir be initialised and migrated by this boot, as a first start would. */
  freshEmbedded?: boolean;
  /** Where the web UI's build is (default: the api's, dist/apps/web). */
  webDir?: string;
}

export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.embeddedDataDir ? null : await createTestDatabase();
  if (options.embeddedDataDir && !options.freshEmbedded && !hasDatabase(options.embeddedDataDir)) {
    cpSync(join(await embeddedTemplate(), 'pgdata'), join(options.embeddedDataDir, 'pgdata'), {
      recursive: true,
    });
  }
  const config = loadConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    NODE_ENV: 'test',
    CANOPY_ADMIN_KEY: TEST_ADMIN_KEY,
    CANOPY_JWT_SECRET: TEST_JWT_SECRET,
    // Provider keys (bring your own key) need one on an external database.
    CANOPY_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    ...(database ? { DATABASE_URL: database.url } : { CANOPY_DATA_DIR: options.embeddedDataDir }),
    ...options.env,
  });
  const app = await createApiApp(config, options.webDir !== undefined ? { webDir: options.webDir } : {});
  try {
    await app.listen(0, '127.0.0.1');
  } catch (err) {
    await app.close();
    await database?.drop();
    throw err;
  }
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return {
    url,
    config,
    app,
    database,
    async close() {
      await app.close();
      await database?.drop();
    },
  };
}

function hasDatabase(dataDir: string): boolean {
  return existsSync(join(dataDir, 'pgdata', 'PG_VERSION'));
}

/**
 * The run's migrated embedded database: made by the first test file that needs it (a first boot, then a clean
 * stop), under a name of the jest run (the workers' parent process), built aside and renamed into place so that
 * a file never copies a half-made one; when two files make it at once, the second's is dropped.
 */
async function embeddedTemplate(): Promise<string> {
  const template = join(tmpdir(), `canopy-embedded-template-${process.ppid}`);
  if (hasDatabase(template)) return template;
  // Those of runs that are over (and what a failed build left).
  for (const name of readdirSync(tmpdir())) {
    const run = Number(/^canopy-embedded-template-(\d+)(?:-building-.*)?$/.exec(name)?.[1]);
    if (Number.isInteger(run) && !isProcessAlive(run))
      rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
  const building = mkdtempSync(`${template}-building-`);
  const app = await startTestApp({ embeddedDataDir: building, freshEmbedded: true });
  await app.close();
  try {
    renameSync(building, template);
  } catch {
    rmSync(building, { recursive: true, force: true });
    if (!hasDatabase(template)) throw new Error(`no embedded template database at ${template}`);
  }
  return template;
}
