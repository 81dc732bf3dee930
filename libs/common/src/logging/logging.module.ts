// JSON logs through pino. Every HTTP request gets an id (a sane incoming x-request-id, else a fresh UUID) that
// is echoed in the x-request-id header, carried by every log line of the request and by error bodies.
// Credentials never reach the logs: the authorization header and ?token= are redacted. A line written inside a
// traced request or run carries its trace_id and span_id.

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { CanopyConfig } from '../config/config.schema';
import { CANOPY_CONFIG } from '../config/config.module';
import { traceLogFields } from '../telemetry/log-correlation';

const REQUEST_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/**
 * The request's id, assigned once: a sane incoming x-request-id or a fresh UUID, stored on `req.id` and echoed
 * in the response header. The api calls it first thing (before body parsing) so even a malformed body's error
 * carries the id; pino-http then finds it already set.
 */
export function assignRequestId(req: IncomingMessage & { id?: unknown }, res: ServerResponse): string {
  if (typeof req.id === 'string') return req.id;
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
  req.id = id;
  res.setHeader('x-request-id', id);
  return id;
}

/** The URL with credential query parameters masked. */
export function redactUrl(url: string | undefined): string | undefined {
  return url?.replace(/([?&](?:token|api_key|key)=)[^&]*/gi, '$1[redacted]');
}

@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [CANOPY_CONFIG],
      useFactory: (config: CanopyConfig) => ({
        pinoHttp: {
          level: config.log.level,
          base: { instance: config.instanceId },
          // trace_id and span_id of the active span (none when OpenTelemetry is off: an empty object).
          mixin: traceLogFields,
          genReqId: assignRequestId,
          // Every line logged while serving a request (ours and the access line) carries `requestId`.
          quietReqLogger: true,
          customAttributeKeys: { reqId: 'requestId' },
          redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
          serializers: {
            req: (req: { id: unknown; method: string; url: string }) => ({
              id: req.id,
              method: req.method,
              url: redactUrl(req.url),
            }),
          },
          autoLogging: { ignore: (req: IncomingMessage) => req.url === '/healthz' || req.url === '/readyz' },
          customLogLevel: (_req: IncomingMessage, res: ServerResponse, err?: Error) =>
            err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
        },
      }),
    }),
  ],
})
export class LoggingModule {}
