// Vite build of the web UI: React, the SDK (@canopy/client) and the core it shares with the service, bundled
// from their sources into dist/apps/web, which the api serves at `/` (apps/api/src/web).

import { resolve } from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const here = import.meta.dirname;
const repo = resolve(here, '../..');

export default defineConfig({
  root: here,
  base: '/',
  plugins: [react()],
  resolve: {
    alias: {
      '@canopy/client': resolve(repo, 'libs/client/src'),
      '@canopy/core': resolve(repo, 'libs/core/src'),
    },
  },
  build: {
    outDir: resolve(repo, 'dist/apps/web'),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    // React with the Markdown renderer and highlight.js's common grammars make the main chunk ~700 kB; the
    // dashboard's charting library is split out (loaded when the dashboard opens).
    chunkSizeWarningLimit: 800,
  },
  // `vite --config apps/web/vite.config.ts`: a dev server with hot reload, the API proxied to `npm start`.
  server: {
    proxy: {
      '/v1': { target: 'http://localhost:3000', ws: true },
    },
  },
});
