// `npm test`: installs what it needs, generates the Prisma client, type-checks, then runs every jest project
// (unit, integration, e2e). The integration and e2e projects prepare their databases on the machine's Postgres
// themselves (jest global setup: a test role without superuser or BYPASSRLS, a migrated template database, one
// copy per test file). Extra arguments go to jest: `npm test -- --selectProjects unit`.

import { join } from 'node:path';
import { ensureBuilt, ensureDependencies, ensurePrismaClient, log, main, root, run } from './lib/steps.mjs';

await main(async () => {
  ensureDependencies();
  ensurePrismaClient();
  const tsc = join(root, 'node_modules', '.bin', 'tsc');
  log('type-checking');
  run(tsc, ['--noEmit', '-p', 'tsconfig.json']);
  // libs/core is isomorphic: it must compile with no Node types at all.
  run(tsc, ['--noEmit', '-p', 'libs/core/tsconfig.lib.json']);
  // The cluster tests start the built api and worker as real processes.
  ensureBuilt('api');
  ensureBuilt('worker');
  log('running the tests');
  // VM modules: PGlite (the embedded database, exercised by e2e tests) loads parts of itself with import().
  run(process.execPath, [
    '--experimental-vm-modules',
    '--disable-warning=ExperimentalWarning',
    join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
    ...process.argv.slice(2),
  ]);
});
