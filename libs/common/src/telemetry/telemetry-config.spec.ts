// OpenTelemetry's configuration from the standard OTEL_* variables: off unless an exporter is configured, each
// signal on once an endpoint is given (or its exporter named), `none` and OTEL_SDK_DISABLED turning it off.

import { loadConfig } from '../config/config.schema';

describe('telemetry configuration', () => {
  it('exports nothing when no OTEL_* variable is set', () => {
    expect(loadConfig({}).telemetry).toMatchObject({
      traces: null,
      metrics: null,
      captureMessageContent: false,
      metricsTenant: false,
      userId: false,
    });
  });

  it('exports traces and metrics over OTLP/HTTP protobuf once an endpoint is set', () => {
    const t = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).telemetry;
    expect(t.protocol).toBe('http/protobuf');
    expect(t.traces).toEqual({
      exporter: 'otlp',
      url: 'http://collector:4318/v1/traces',
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
    });
    expect(t.metrics).toEqual({
      exporter: 'otlp',
      url: 'http://collector:4318/v1/metrics',
      intervalMs: 60_000,
    });
  });

  it('takes the per-signal endpoints, the JSON protocol, the sampler and its argument', () => {
    const t = loadConfig({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/v1/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_SERVICE_NAME: 'chat-backend',
      OTEL_SEMCONV_STABILITY_OPT_IN: 'http,database',
    }).telemetry;
    expect(t.traces).toMatchObject({
      url: 'https://traces.example/v1/traces',
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
    });
    // Only the traces endpoint was given: no metrics.
    expect(t.metrics).toBeNull();
    expect(t).toMatchObject({
      protocol: 'http/json',
      serviceName: 'chat-backend',
      semconvStabilityOptIn: 'http,database',
    });
  });

  it('names the exporter of a signal, or turns it off', () => {
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).telemetry.traces?.url).toBe(
      'http://localhost:4318/v1/traces',
    );
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'console' }).telemetry.traces?.exporter).toBe('console');
    const metricsOff = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_METRICS_EXPORTER: 'none',
    });
    expect(metricsOff.telemetry.traces).not.toBeNull();
    expect(metricsOff.telemetry.metrics).toBeNull();
    const disabled = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' });
    expect(disabled.telemetry).toMatchObject({ traces: null, metrics: null });
  });

  it('takes the opt-ins: message content, the tenant on metrics, the end user on runs', () => {
    expect(
      loadConfig({
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
        CANOPY_OTEL_METRICS_TENANT: 'true',
        CANOPY_OTEL_USER_ID: '1',
      }).telemetry,
    ).toMatchObject({ captureMessageContent: true, metricsTenant: true, userId: true });
  });

  it('refuses what it cannot honour, naming the variable', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL: must be http\/protobuf or http\/json/,
    );
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(/OTEL_TRACES_SAMPLER/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: 'no-equals-sign' })).toThrow(
      /OTEL_EXPORTER_OTLP_HEADERS/,
    );
  });
});
