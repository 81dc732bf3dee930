// The otel bench's span counts against what the official OTLP/protobuf exporter sends: spans of two scopes, three
// names and three kinds, exported through the bench's sink and counted from its kept bodies.

import { SpanKind } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

import { OtlpSink, spansOf } from './otlp-sink';
import { countSpans, SpanCounts } from './otlp-spans';

describe('OTLP span counts', () => {
  let sink: OtlpSink;
  beforeAll(async () => (sink = await OtlpSink.start()));
  afterAll(() => sink.close());

  it('counts by scope, name and kind what the protobuf exporter sent, and the bytes and requests', async () => {
    const provider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${sink.url}/v1/traces` }))],
    });
    const canopy = provider.getTracer('canopy');
    const pg = provider.getTracer('@opentelemetry/instrumentation-pg');
    for (let i = 0; i < 3; i++) {
      canopy.startSpan('invoke_agent', { attributes: { 'canopy.run.id': `run-${i}`, n: i } }).end();
    }
    canopy.startSpan('chat echo', { kind: SpanKind.CLIENT }).end();
    pg.startSpan('pg.query:SELECT canopy', {
      kind: SpanKind.CLIENT,
      attributes: { 'db.query.text': 'x'.repeat(300) },
    }).end();
    pg.startSpan('POST /v1/sessions/:id/prompt', { kind: SpanKind.SERVER }).end();
    await provider.forceFlush();
    await provider.shutdown();

    const tally = sink.take();
    expect(tally.traceRequests).toBe(6);
    expect(tally.traceBytes).toBeGreaterThan(300);
    expect(tally.metricRequests).toBe(0);
    const counts = spansOf(tally);
    expect(counts?.total).toBe(6);
    expect(counts?.list()).toEqual([
      { scope: 'canopy', name: 'invoke_agent', kind: 'internal', count: 3 },
      { scope: 'canopy', name: 'chat echo', kind: 'client', count: 1 },
      {
        scope: '@opentelemetry/instrumentation-pg',
        name: 'pg.query:SELECT canopy',
        kind: 'client',
        count: 1,
      },
      {
        scope: '@opentelemetry/instrumentation-pg',
        name: 'POST /v1/sessions/:id/prompt',
        kind: 'server',
        count: 1,
      },
    ]);
    expect(sink.take().traceRequests).toBe(0);
  });

  it('refuses a body that is not protobuf', () => {
    expect(() => countSpans(Uint8Array.from([0x0f, 0x01]), new SpanCounts())).toThrow(/wire type/);
    expect(() => countSpans(Uint8Array.from([0x0a, 0x05, 0x01]), new SpanCounts())).toThrow(/truncated/);
  });
});
