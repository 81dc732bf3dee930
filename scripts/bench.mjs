// `npm run bench`: performance figures and ratios (benchmarks are programs, not tests).

import { join } from 'node:path';
import { ensureDependencies, ensurePrismaClient, main, root, run } from './lib/steps.mjs';

await main(async () => {
  ensureDependencies();
  ensurePrismaClient();
  run(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'bench', 'index.ts'), ...process.argv.slice(2)]);
});
