// Vite for the example: React; in development the page's origin forwards /v1 to Canopy and /canopy-token to the
// token backend (examples/token-backend.ts), as serve.ts does in production.

import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const canopy = process.env.CANOPY_URL ?? 'http://localhost:3000';
const tokens = process.env.TOKEN_BACKEND_URL ?? 'http://127.0.0.1:8787';

export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
  server: {
    proxy: {
      '/v1': { target: canopy, changeOrigin: true },
      '/canopy-token': { target: tokens, changeOrigin: true },
    },
  },
});
