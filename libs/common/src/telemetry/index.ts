// OpenTelemetry for Canopy: starting the SDK from the configuration, the names of spans and metrics, trace context
// across hops, GenAI metrics and log correlation.

export * from './telemetry';
export * from './gen-ai';
export * from './gen-ai-metrics';
export * from './trace-context';
export * from './log-correlation';
export * from './telemetry.module';
