// Serves the built example (npx vite build --config examples/ai-sdk-react/vite.config.ts) for production:
//
//   CANOPY_URL=http://localhost:3000 CANOPY_KEY=ck_... npx tsx examples/ai-sdk-react/serve.ts
//
// then open http://127.0.0.1:8788/ (PORT to change it).

import { join } from 'node:path';
import { startExampleServer } from './server';

const server = await startExampleServer({
  canopyUrl: process.env.CANOPY_URL ?? 'http://localhost:3000',
  canopyKey: process.env.CANOPY_KEY ?? '',
  root: join(import.meta.dirname, 'dist'),
  port: Number(process.env.PORT ?? 8788),
});
console.error(`useChat on Canopy: ${server.url}/`);
