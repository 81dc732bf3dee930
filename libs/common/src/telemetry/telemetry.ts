// OpenTelemetry in a Canopy process: started once at boot from the validated configuration when a signal is
// exported (otel-sdk.ts, loaded only then), off otherwise. Code that makes spans and metrics uses the
// @opentelemetry/api, whose calls are no-ops until the SDK registers its providers, and asks here only what the
// operator opted into (message content on spans, the tenant on metrics, the end user on runs).

import { trace, type Tracer } from '@opentelemetry/api';
import type { TelemetryConfig } from '../config/config.schema';
import type { StartedSdk } from './otel-sdk';

/** What the operator opted into, and whether OTLP metrics are recorded at all. */
export interface TelemetryOptions {
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: messages and tool arguments/results on spans. */
  readonly captureMessageContent: boolean;
  /** CANOPY_OTEL_METRICS_TENANT: canopy.tenant.id on metrics. */
  readonly metricsTenant: boolean;
  /** CANOPY_OTEL_USER_ID: enduser.id on a run's span. */
  readonly userId: boolean;
  /** Metrics are exported: the GenAI instruments record (per streamed chunk too). */
  readonly metrics: boolean;
}

const NOTHING: TelemetryOptions = {
  captureMessageContent: false,
  metricsTenant: false,
  userId: false,
  metrics: false,
};

let options: TelemetryOptions = NOTHING;
let sdk: StartedSdk | null = null;

/** The instrumentation scope of Canopy's own spans and metrics. */
export const CANOPY_INSTRUMENTATION = 'canopy';

/**
 * Starts OpenTelemetry for this process when the configuration exports traces or metrics; true when started. Call
 * it before the modules it instruments (http, express, pg, ioredis) are required: their spans are lost otherwise.
 */
export function startTelemetry(config: TelemetryConfig, defaultServiceName: string): boolean {
  options = {
    captureMessageContent: config.captureMessageContent,
    metricsTenant: config.metricsTenant,
    userId: config.userId,
    metrics: config.metrics !== null,
  };
  if (sdk || (!config.traces && !config.metrics)) return false;
  // Loaded here, not imported: a process that exports nothing never loads the SDK.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startOtelSdk } = require('./otel-sdk') as typeof import('./otel-sdk');
  sdk = startOtelSdk(config, defaultServiceName);
  return true;
}

/** Flushes and stops what startTelemetry started (at shutdown); a no-op when nothing was. */
export async function shutdownTelemetry(): Promise<void> {
  const started = sdk;
  sdk = null;
  await started?.shutdown().catch(() => undefined);
}

/** What the operator opted into (all off until startTelemetry, or configureTelemetry in tests). */
export function telemetryOptions(): TelemetryOptions {
  return options;
}

/** Sets the options without starting the SDK: tests that register their own providers. */
export function configureTelemetry(next: Partial<TelemetryOptions>): void {
  options = { ...options, ...next };
}

/** The tracer of Canopy's own spans (a no-op tracer until a provider is registered). */
export function canopyTracer(): Tracer {
  return trace.getTracer(CANOPY_INSTRUMENTATION);
}
