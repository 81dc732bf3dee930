// Builds the api application from a validated config: used by main.ts and by end-to-end tests, which boot the
// real app on a free port and speak HTTP to it.

import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { raw, type Request, type Response } from 'express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { WsAdapter } from '@nestjs/platform-ws';
import { cleanupOpenApiDoc } from 'nestjs-zod';
import { Logger } from 'nestjs-pino';
import { assignRequestId, runWithAuditHolder, type CanopyConfig } from '@canopy/common';
import { ApiModule } from './api.module';
import { MetricsService } from './ops/metrics.service';
import { ShutdownService } from './ops/shutdown.service';
import { webUiMiddleware } from './web/web-ui.middleware';

export interface ApiAppOptions {
  /** Where the built web UI is (default `dist/apps/web` under the working directory). */
  webDir?: string;
}

export async function createApiApp(
  config: CanopyConfig,
  options: ApiAppOptions = {},
): Promise<NestExpressApplication> {
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
      const requestId = assignRequestId(req, res);
      // The request's audit context: the guard fills in who acts once it knows.
      runWithAuditHolder({ requestId }, next);
    },
  );
  app.use(app.get(ShutdownService).middleware);
  const metrics = app.get(MetricsService);
  app.use((req: Request, res: Response, next: () => void) => {
    const end = metrics.httpDuration.startTimer({ method: req.method });
    res.on('finish', () => {
      // The route pattern (/v1/sessions/:id), never the raw URL: ids would explode the label set.
      const matched = (req as { route?: { path?: unknown } }).route?.path;
      const route = typeof matched === 'string' ? `${req.baseUrl}${matched}` : 'unmatched';
      end({ route, status: String(res.statusCode) });
    });
    next();
  });
  // The web UI at `/` (API and operations routes pass through untouched).
  app.use(webUiMiddleware(options.webDir));
  // An import carries a whole conversation: its own, larger limit, and its bytes as received (registered first, so
  // the general parser skips it): the import parses and checks a large body off the event loop.
  app.use('/v1/sessions/import', raw({ type: () => true, limit: config.http.importBodyLimit }));
  // An upload (POST /v1/files) streams to storage as it arrives, whatever its content type: no parser reads it.
  app.useBodyParser('json', {
    limit: config.http.bodyLimit,
    type: (req: Request) =>
      !isFileUpload(req) && req.is('application/json') !== false && req.is('application/json') !== null,
  });
  app.useWebSocketAdapter(new WsAdapter(app));
  app.disable('x-powered-by');
  app.enableShutdownHooks();

  const document = cleanupOpenApiDoc(
    SwaggerModule.createDocument(
      app,
      new DocumentBuilder()
        .setTitle('Canopy')
        .setDescription(
          'Multi-tenant session manager for LLM chat products: branching conversation trees, agent runs, live sessions.',
        )
        .setVersion('1')
        .addBearerAuth()
        .build(),
    ),
  );
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'docs/openapi.json',
    yamlDocumentUrl: 'docs/openapi.yaml',
  });
  return app;
}

function isFileUpload(req: Request): boolean {
  return (
    req.method === 'POST' && (req.originalUrl ?? req.url).split('?')[0]?.replace(/\/+$/, '') === '/v1/files'
  );
}
