// OpenTelemetry in a test process: a tracer provider that keeps finished spans in memory (the SDK's
// InMemorySpanExporter) and a meter provider read on demand, registered globally with the async-hooks context
// manager, so Canopy's spans and metrics can be asserted as a tree. Under jest the require hooks of the
// instrumentations do not apply: only Canopy's own (manual) spans are recorded here.

import { metrics, trace, context, propagation } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-node';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { configureTelemetry, resetGenAiMetrics, type TelemetryOptions } from '@canopy/common';

export class InMemoryTelemetry {
  readonly exporter = new InMemorySpanExporter();
  readonly metricExporter = new InMemoryMetricExporter(AggregationTemporality.DELTA);
  private readonly processor = new SimpleSpanProcessor(this.exporter);
  private readonly provider = new NodeTracerProvider({ spanProcessors: [this.processor] });
  private readonly reader = new PeriodicExportingMetricReader({
    exporter: this.metricExporter,
    exportIntervalMillis: 3_600_000,
  });
  private readonly meterProvider = new MeterProvider({ readers: [this.reader] });

  /** Registers the providers globally and sets what the operator opted into (metrics recorded). */
  static start(options: Partial<TelemetryOptions> = {}): InMemoryTelemetry {
    const telemetry = new InMemoryTelemetry();
    telemetry.provider.register();
    metrics.setGlobalMeterProvider(telemetry.meterProvider);
    resetGenAiMetrics();
    configureTelemetry({ metrics: true, ...options });
    return telemetry;
  }

  /** The finished spans so far (flushed first). */
  async spans(): Promise<ReadableSpan[]> {
    await this.processor.forceFlush();
    return this.exporter.getFinishedSpans();
  }

  /** The metrics recorded since the last read or reset: name -> data points' attributes and values. */
  async metrics(): Promise<Map<string, Array<{ attributes: Record<string, unknown>; value: unknown }>>> {
    await this.reader.forceFlush();
    const out = new Map<string, Array<{ attributes: Record<string, unknown>; value: unknown }>>();
    for (const resource of this.metricExporter.getMetrics()) {
      for (const scope of resource.scopeMetrics) {
        for (const metric of scope.metrics) {
          out.set(
            metric.descriptor.name,
            metric.dataPoints.map((p) => ({ attributes: { ...p.attributes }, value: p.value })),
          );
        }
      }
    }
    return out;
  }

  /** Forgets the spans and metrics so far (metrics are deltas: what was recorded since the last read). */
  async reset(): Promise<void> {
    await this.reader.forceFlush();
    this.exporter.reset();
    this.metricExporter.reset();
  }

  async shutdown(): Promise<void> {
    configureTelemetry({ metrics: false, captureMessageContent: false, metricsTenant: false, userId: false });
    await this.provider.shutdown();
    await this.meterProvider.shutdown();
    trace.disable();
    metrics.disable();
    context.disable();
    propagation.disable();
    resetGenAiMetrics();
  }
}

/** The spans as a tree printout (name per line, indented by depth), parents before children. */
export function spanTree(spans: readonly ReadableSpan[]): string {
  const ids = new Set(spans.map((s) => s.spanContext().spanId));
  const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId ?? '';
  const lines: string[] = [];
  const walk = (parent: string, depth: number) => {
    const children = spans
      .filter((s) => parentOf(s) === parent)
      .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
    for (const s of children) {
      lines.push(`${'  '.repeat(depth)}${s.name}`);
      walk(s.spanContext().spanId, depth + 1);
    }
  };
  const roots = spans.filter((s) => !ids.has(parentOf(s)));
  for (const r of roots) {
    lines.push(r.name);
    walk(r.spanContext().spanId, 1);
  }
  return lines.join('\n');
}
