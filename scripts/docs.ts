// `npm run docs`: brings the generated sections of docs/ up to date (scripts/lib/docs-sections.ts says which,
// from what). Boots the built api (building it first when a source changed) against a scratch database on the
// test Postgres (as `npm test` uses), reads its OpenAPI document and its routes' access levels, renders the
// sections between their markers and formats the files with prettier. `npm run docs -- --check` writes nothing
// and exits 1 when a file is out of date. apps/api/test/docs.e2e-spec.ts runs the same check.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { CanopyConfig } from '../libs/common/src/config/config.schema';
import { createTestDatabase, prepareTemplate } from '../libs/testing/src/test-postgres';
import { fetchOpenApiDocument, routeAccess } from './lib/docs-app';
import { renderDocs, ROOT } from './lib/docs-sections';

type CreateApiApp = (config: CanopyConfig) => Promise<NestExpressApplication>;
type LoadConfig = (env: Record<string, string>) => CanopyConfig;

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  // The built app, not its sources: Nest's injection needs the decorator metadata tsc emits (tsx's esbuild
  // does not).
  const steps = (await import(join(ROOT, 'scripts/lib/steps.mjs'))) as {
    ensureBuilt(project: string): string;
  };
  steps.ensureBuilt('api');
  const dist = join(ROOT, 'dist/apps/api');
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { createApiApp } = require(join(dist, 'apps/api/src/app.factory.js')) as {
    createApiApp: CreateApiApp;
  };
  const { loadConfig } = require(join(dist, 'libs/common/src/index.js')) as { loadConfig: LoadConfig };
  /* eslint-enable @typescript-eslint/no-require-imports */

  await prepareTemplate();
  const database = await createTestDatabase();
  let app: NestExpressApplication | null = null;
  try {
    app = await createApiApp(
      loadConfig({
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'silent',
        NODE_ENV: 'test',
        DATABASE_URL: database.url,
        DATABASE_UPKEEP_INTERVAL_MS: '0',
        CANOPY_ADMIN_KEY: 'docs-generator-admin-key-0000000000',
        CANOPY_JWT_SECRET: 'docs-generator-jwt-secret-000000000000000',
      }),
    );
    await app.listen(0, '127.0.0.1');
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    const openapi = await fetchOpenApiDocument(url);
    const access = routeAccess(app);
    const files = await renderDocs({ openapi, access });
    let stale = 0;
    for (const { file, current, expected } of files) {
      if (current === expected) continue;
      stale++;
      if (check) process.stdout.write(`${file} is out of date\n`);
      else {
        writeFileSync(join(ROOT, file), expected);
        process.stdout.write(`wrote ${file}\n`);
      }
    }
    if (!stale) process.stdout.write('docs/ is up to date\n');
    if (check && stale) process.exitCode = 1;
  } finally {
    await app?.close();
    await database.drop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`docs failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
