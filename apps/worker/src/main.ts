// Entry point of the worker deployable (distributed mode only: the embedded runtime runs turns in the api).

import { hostname } from 'node:os';
import { Logger as NestLogger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
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
import { WorkerModule } from './worker.module';

async function main(): Promise<void> {
  installSourceMappedStacks();
  tolerateDependencyRejections(isDependencyUnavailable, (message, reason) =>
    new NestLogger('Canopy').warn({ err: reason }, message),
  );
  let config: CanopyConfig;
  try {
    config = loadConfig(process.env, { defaultInstanceId: `${hostname()}:${process.pid}:worker` });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`canopy worker: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  if (!config.database.url || !config.redis.url) {
    process.stderr.write(
      'canopy worker: DATABASE_URL and REDIS_URL are required; the worker serves the distributed runtime (the embedded one runs turns inside the api)\n',
    );
    process.exit(1);
  }
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), {
    bufferLogs: true,
    abortOnError: false,
  });
  app.useLogger(app.get(Logger));
  app.enableShutdownHooks();
  armShutdownDeadline(config.shutdownGraceMs, (m) => new NestLogger('Shutdown').error(m));
  new NestLogger('Canopy').log(`worker ${config.instanceId} ready`);
}

main().catch((err: unknown) => {
  process.stderr.write(`canopy worker: ${startFailureText(err)}\n`);
  process.exit(1);
});
