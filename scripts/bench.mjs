// `npm run bench`: performance figures and ratios (benchmarks are programs, not tests).

import { join } from 'node:path';
import { ensureBuilt, ensureDependencies, ensurePrismaClient, main, root, run } from './lib/steps.mjs';

/** Sections that start the built deployables as processes (bench/index.ts names them). */
const NEEDS_BUILD = ['cluster', 'fairness', 'http', 'live', 'long', 'otel', 'soak'];

await main(async () => {
  ensureDependencies();
  ensurePrismaClient();
  const sections = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
  if (sections.length === 0 || sections.some((name) => NEEDS_BUILD.includes(name))) {
    ensureBuilt('api');
    ensureBuilt('worker');
  }
  run(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'bench', 'index.ts'), ...process.argv.slice(2)]);
});
