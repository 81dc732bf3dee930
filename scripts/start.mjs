// `npm start`: the service on the embedded default. Installs what it needs, generates the Prisma client, builds
// the api and the web UI it serves, then runs it (migrations are applied at boot; with no DATABASE_URL the data
// lives in ./.canopy/).
// `npm start -- worker` runs the worker deployable instead (distributed mode).

import { spawn } from 'node:child_process';
import {
  ensureBuilt,
  ensureDependencies,
  ensurePrismaClient,
  ensureWebBuilt,
  main,
  root,
} from './lib/steps.mjs';
import { serviceProcess } from './lib/service-process.mjs';

await main(async () => {
  const project = process.argv[2] === 'worker' ? 'worker' : 'api';
  ensureDependencies();
  ensurePrismaClient();
  const entry = ensureBuilt(project);
  // The api serves the web UI at `/`.
  if (project === 'api') ensureWebBuilt();
  const service = serviceProcess({ embedded: project === 'api' && !process.env.DATABASE_URL });
  const child = spawn(process.execPath, [...service.args, entry], {
    cwd: root,
    stdio: 'inherit',
    env: { ...service.env, ...process.env },
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  const code = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 128 : 1))));
  process.exit(code);
});
