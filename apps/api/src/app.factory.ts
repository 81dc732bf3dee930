// Builds the api application from a validated config: used by main.ts and by end-to-end tests, which boot the
// real app on a free port and speak HTTP to it.

import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'nestjs-pino';
import { assignRequestId, type CanopyConfig } from '@canopy/common';
import { ApiModule } from './api.module';

export async function createApiApp(config: CanopyConfig): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(ApiModule.forRoot(config), {
    bufferLogs: true,
    bodyParser: false,
    // Throw start-up failures to the caller (main.ts reports them and exits; tests see them).
    abortOnError: false,
  });
  app.useLogger(app.get(Logger));
  app.use(
    (
      req: Parameters<typeof assignRequestId>[0],
      res: Parameters<typeof assignRequestId>[1],
      next: () => void,
    ) => {
      assignRequestId(req, res);
      next();
    },
  );
  app.useBodyParser('json', { limit: config.http.bodyLimit });
  app.disable('x-powered-by');
  app.enableShutdownHooks();

  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Canopy')
      .setDescription(
        'Multi-tenant session manager for LLM chat products: branching conversation trees, agent runs, live sessions.',
      )
      .setVersion('1')
      .addBearerAuth()
      .build(),
  );
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'docs/openapi.json',
    yamlDocumentUrl: 'docs/openapi.yaml',
  });
  return app;
}
