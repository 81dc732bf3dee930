// Boots the worker from a validated configuration (main.ts loads this once OpenTelemetry is started).

import { Logger as NestLogger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import {
  armShutdownDeadline,
  installSourceMappedStacks,
  isDependencyUnavailable,
  tolerateDependencyRejections,
  type CanopyConfig,
} from '@canopy/common';
import { WorkerModule } from './worker.module';

export async function startWorker(config: CanopyConfig): Promise<void> {
  installSourceMappedStacks();
  tolerateDependencyRejections(isDependencyUnavailable, (message, reason) =>
    new NestLogger('Canopy').warn({ err: reason }, message),
  );
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), {
    bufferLogs: true,
    abortOnError: false,
  });
  app.useLogger(app.get(Logger));
  app.enableShutdownHooks();
  armShutdownDeadline(config.shutdownGraceMs, (m) => new NestLogger('Shutdown').error(m));
  new NestLogger('Canopy').log(`worker ${config.instanceId} ready`);
}
