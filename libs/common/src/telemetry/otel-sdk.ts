// The OpenTelemetry SDK for Node, built from the validated TelemetryConfig: OTLP/HTTP exporters (protobuf or JSON),
// the sampler, and the instrumentations of HTTP, Express, pg and ioredis. Required only when a signal is exported
// (telemetry.ts), so a process without OTEL_* configuration never loads it.

import { createNoopMeter, type MeterProvider } from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { OTLPTraceExporter as OTLPTraceExporterJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPTraceExporterProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPMetricExporter as OTLPMetricExporterJson } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as OTLPMetricExporterProto } from '@opentelemetry/exporter-metrics-otlp-proto';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import {
  ConsoleMetricExporter,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from '@opentelemetry/sdk-metrics';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import type { IncomingMessage } from 'node:http';
import type { TelemetryConfig } from '../config/config.schema';

/** Paths probed by health checks and scrapers: no trace of their own. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);
/**
 * What the pg instrumentation records its own metrics with: nothing. It records a histogram per statement
 * (db.client.operation.duration) and moves three connection counters on every checkout and return of a pooled
 * connection (db.client.connection.*), about 1% of a traced api's CPU at the otel bench's load, for figures the
 * statements' spans (their durations) and GET /metrics (canopy_db_pool_*) already give.
 */
const NO_METRICS: MeterProvider = { getMeter: () => createNoopMeter() };
/** Query parameters that carry credentials (`?token=` on SSE and WebSocket URLs): redacted on spans. */
const CREDENTIAL_PARAMS = [
  'token',
  'api_key',
  'key',
  'sig',
  'Signature',
  'X-Amz-Signature',
  'X-Amz-Credential',
];

export interface StartedSdk {
  shutdown(): Promise<void>;
}

/** Starts the SDK (registers the global tracer and meter providers, the propagator and the instrumentations). */
export function startOtelSdk(config: TelemetryConfig, defaultServiceName: string): StartedSdk {
  const { traces, metrics } = config;
  // A statement or command outside a traced operation (the pollers, the queue's own commands) is not a trace;
  // taking a pooled connection is not a span of its own (the statement's span covers its wait).
  const pg = new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true });
  const sdk = new NodeSDK({
    serviceName: config.serviceName ?? defaultServiceName,
    ...(traces
      ? {
          spanProcessors: [new BatchSpanProcessor(spanExporter(config))],
          sampler: sampler(traces.sampler, traces.samplerRatio),
        }
      : { spanProcessors: [] }),
    metricReaders: metrics
      ? [
          new PeriodicExportingMetricReader({
            exporter: metricExporter(config),
            exportIntervalMillis: metrics.intervalMs,
            exportTimeoutMillis: Math.min(30_000, metrics.intervalMs),
          }),
        ]
      : [],
    // Canopy's logs stay pino's (lines on stdout carry trace_id and span_id): no OTLP log export.
    logRecordProcessors: [],
    instrumentations: traces
      ? [
          new HttpInstrumentation({
            ignoreIncomingRequestHook: (req: IncomingMessage) =>
              UNTRACED_PATHS.has((req.url ?? '').split('?')[0] ?? ''),
            // Outgoing calls are traced inside a traced operation only (not the background pollers').
            requireParentforOutgoingSpans: true,
            redactedQueryParams: CREDENTIAL_PARAMS,
            redactedQueryParamsServer: CREDENTIAL_PARAMS,
          }),
          // Express names the request's span by its route (http.route). A span per middleware and handler (ten or so
          // per request, Nest's included) said nothing the request's span does not, at a cost on every request
          // (the otel bench).
          new ExpressInstrumentation({
            ignoreLayersType: [
              ExpressLayerType.MIDDLEWARE,
              ExpressLayerType.ROUTER,
              ExpressLayerType.REQUEST_HANDLER,
            ],
          }),
          pg,
          // Likewise for Redis: no trace of its own for a command outside a traced operation.
          new IORedisInstrumentation({ requireParentSpan: true }),
        ]
      : [],
  });
  sdk.start();
  // After start: it gives every instrumentation the global meter provider.
  pg.setMeterProvider(NO_METRICS);
  return { shutdown: () => sdk.shutdown() };
}

function spanExporter(config: TelemetryConfig): SpanExporter {
  const traces = config.traces!;
  if (traces.exporter === 'console') return new ConsoleSpanExporter();
  return config.protocol === 'http/json'
    ? new OTLPTraceExporterJson({ url: traces.url })
    : new OTLPTraceExporterProto({ url: traces.url });
}

function metricExporter(config: TelemetryConfig): PushMetricExporter {
  const metrics = config.metrics!;
  if (metrics.exporter === 'console') return new ConsoleMetricExporter();
  return config.protocol === 'http/json'
    ? new OTLPMetricExporterJson({ url: metrics.url })
    : new OTLPMetricExporterProto({ url: metrics.url });
}

/** The specification's samplers by their OTEL_TRACES_SAMPLER names. */
export function sampler(name: NonNullable<TelemetryConfig['traces']>['sampler'], ratio: number): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}
