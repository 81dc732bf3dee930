// `npm run build:client`: the installable @canopy/client package in libs/client/dist (then `npm pack` there).
// JS: Vite's library mode (libs/client/vite.config.mjs). Types: tsc's declarations of the client and the core it
// compiles in, with the `@canopy/core` specifier rewritten to the relative path of those declarations.

import { readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { main, root, run } from './lib/steps.mjs';

const bin = (name) => join(root, 'node_modules', '.bin', name);
const pkg = join(root, 'libs', 'client');
const types = join(pkg, 'dist', 'types');

await main(async () => {
  run(bin('vite'), ['build', '--config', join(pkg, 'vite.config.mjs'), '--logLevel', 'warn']);
  rmSync(types, { recursive: true, force: true });
  run(bin('tsc'), [
    '-p',
    join(pkg, 'tsconfig.lib.json'),
    '--emitDeclarationOnly',
    '--declaration',
    '--outDir',
    types,
    '--incremental',
    'false',
  ]);
  const core = join(types, 'libs', 'core', 'src', 'index');
  for (const file of walk(join(types, 'libs', 'client'))) {
    if (!file.endsWith('.d.ts')) continue;
    const text = readFileSync(file, 'utf8');
    let target = relative(dirname(file), core).split('\\').join('/');
    if (!target.startsWith('.')) target = `./${target}`;
    writeFileSync(file, text.replaceAll(/(['"])@canopy\/core\1/g, `'${target}'`));
  }
});

function* walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* walk(path);
    else yield path;
  }
}
