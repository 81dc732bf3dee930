// Entry point of the api deployable: parse the environment once, boot, listen.

import { hostname } from 'node:os';
import { Logger } from '@nestjs/common';
import {
  ConfigError,
  armShutdownDeadline,
  installSourceMappedStacks,
  isDependencyUnavailable,
  loadConfig,
  startFailureText,
  tolerateDependencyRejections,
  type CanopyConfig,
} from '@canopy/common';
import { createApiApp } from './app.factory';

async function main(): Promise<void> {
  installSourceMappedStacks();
  tolerateDependencyRejections(isDependencyUnavailable, (message, reason) =>
    new Logger('Canopy').warn({ err: reason }, message),
  );
  let config: CanopyConfig;
  try {
    config = loadConfig(process.env, { defaultInstanceId: `${hostname()}:${process.pid}` });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`canopy: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const app = await createApiApp(config);
  armShutdownDeadline(config.shutdownGraceMs, (m) => new Logger('Shutdown').error(m));
  await app.listen(config.http.port, config.http.host);
  const url = await app.getUrl();
  new Logger('Canopy').log(
    `api listening on ${url.replace('[::1]', 'localhost')} (database: ${config.database.url ? 'external' : 'embedded'}, docs: /docs)`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`canopy: ${startFailureText(err)}\n`);
  process.exit(1);
});
