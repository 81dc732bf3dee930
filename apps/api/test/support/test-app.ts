// Boots the real api (same factory as main.ts) on a free loopback port, against a database of its own on the
// machine's Postgres, or against the embedded PGlite when asked. Tests then speak HTTP to it like any client.

import type { NestExpressApplication } from '@nestjs/platform-express';
import { loadConfig, type CanopyConfig } from '@canopy/common';
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
  /** Use the embedded PGlite in this data directory instead of a Postgres test database. */
  embeddedDataDir?: string;
  /** Where the web UI's build is (default: the api's, dist/apps/web). */
  webDir?: string;
}

export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.embeddedDataDir ? null : await createTestDatabase();
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
