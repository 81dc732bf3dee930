// Boots the api from a validated configuration and listens (main.ts loads this once OpenTelemetry is started).

import { Logger } from '@nestjs/common';
import {
  armShutdownDeadline,
  installSourceMappedStacks,
  isDependencyUnavailable,
  tolerateDependencyRejections,
  type CanopyConfig,
} from '@canopy/common';
import { createApiApp } from './app.factory';

export async function startApi(config: CanopyConfig): Promise<void> {
  installSourceMappedStacks();
  tolerateDependencyRejections(isDependencyUnavailable, (message, reason) =>
    new Logger('Canopy').warn({ err: reason }, message),
  );
  const app = await createApiApp(config);
  armShutdownDeadline(config.shutdownGraceMs, (m) => new Logger('Shutdown').error(m));
  await app.listen(config.http.port, config.http.host);
  const url = await app.getUrl();
  new Logger('Canopy').log(
    `api listening on ${url.replace('[::1]', 'localhost')} (database: ${config.database.url ? 'external' : 'embedded'}, docs: /docs)`,
  );
}
