// The installable @canopy/client package: ESM and CommonJS bundles of the SDK with the parts of @canopy/core it
// uses compiled in (core is not published on its own); its dependencies stay external. Declarations come from
// tsc (scripts/build-client.mjs).

import { resolve } from 'node:path';
import { defineConfig } from 'vite';

const here = import.meta.dirname;
const repo = resolve(here, '../..');

export default defineConfig({
  root: here,
  resolve: { alias: { '@canopy/core': resolve(repo, 'libs/core/src') } },
  build: {
    outDir: resolve(here, 'dist'),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    minify: false,
    lib: {
      entry: resolve(here, 'src/index.ts'),
      formats: ['es', 'cjs'],
      fileName: (format) => (format === 'es' ? 'index.js' : 'index.cjs'),
    },
    rollupOptions: { external: ['zod', 'eventsource-parser'] },
  },
});
