// `npm test`: installs what it needs, generates the Prisma client, type-checks, builds the api, the worker and the
// web UI (and installs chromium for the browser test when it is missing), then runs every jest project
// (unit, integration, e2e). The integration and e2e projects prepare their databases on the machine's Postgres
// themselves (jest global setup: a test role without superuser or BYPASSRLS, a migrated template database, one
// copy per test file). Extra arguments go to jest: `npm test -- --selectProjects unit`; without the e2e project
// nothing is built (`npm run test:quick`: unit and integration, the edit loop's run).

import { join } from 'node:path';
import {
  ensureAllBuilt,
  ensureChromium,
  ensureDependencies,
  ensurePrismaClient,
  log,
  main,
  root,
  run,
  runAsync,
} from './lib/steps.mjs';

/** Whether the jest arguments leave the e2e project in (the browser tests are e2e tests). */
function runsEndToEnd(args) {
  const selected = [];
  args.forEach((arg, i) => {
    if (arg === '--selectProjects') {
      for (let j = i + 1; j < args.length && !args[j].startsWith('-'); j++) selected.push(args[j]);
    } else if (arg.startsWith('--selectProjects=')) selected.push(...arg.slice(17).split(','));
  });
  return selected.length === 0 || selected.includes('e2e');
}

await main(async () => {
  ensureDependencies();
  ensurePrismaClient();
  const tsc = join(root, 'node_modules', '.bin', 'tsc');
  // Two lanes side by side (two cores), about as long as each other: the type checks then the web UI's build
  // (27 s and 10 s on a fresh clone), and the builds of the api and the worker (20 s each).
  const typeChecks = async () => {
    log('type-checking');
    for (const project of [
      'tsconfig.json',
      // libs/core is isomorphic: it must compile with no Node types at all.
      'libs/core/tsconfig.lib.json',
      // So is the SDK (browsers and Node, DOM types only).
      'libs/client/tsconfig.lib.json',
      // The web UI compiles for browsers (DOM, JSX) and its Vite config for Node: each with its own settings.
      'apps/web/tsconfig.app.json',
      'apps/web/tsconfig.node.json',
      // The examples are ES modules run with tsx against the SDK's sources (libs/client/src/examples.e2e-spec.ts).
      'examples/tsconfig.json',
      // The AI SDK React example compiles for browsers against @ai-sdk/react.
      'examples/ai-sdk-react/tsconfig.json',
    ]) {
      await runAsync(tsc, ['--noEmit', '-p', project]);
    }
  };
  const endToEnd = runsEndToEnd(process.argv.slice(2));
  // The cluster tests start the built api and worker as real processes; the browser journey (apps/web/test) opens
  // the built UI in Debian's chromium, installed beside them when it is missing.
  await Promise.all([
    typeChecks().then(() => (endToEnd ? ensureAllBuilt([], true) : undefined)),
    endToEnd ? ensureAllBuilt(['api', 'worker'], false) : Promise.resolve(),
    endToEnd ? ensureChromium() : Promise.resolve(),
  ]);
  // VM modules: PGlite (the embedded database, exercised by e2e tests) loads parts of itself with import().
  log('running the tests');
  run(process.execPath, [
    '--experimental-vm-modules',
    '--disable-warning=ExperimentalWarning',
    join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
    ...process.argv.slice(2),
  ]);
});
