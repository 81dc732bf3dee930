// Log correlation: every pino line written inside a traced request or run carries its trace_id and span_id (the
// names of OpenTelemetry's log data model), so a backend can jump from a log line to its trace and back.

import { context, isSpanContextValid, trace } from '@opentelemetry/api';

/** The active span's ids for a log line; nothing outside a (sampled or not) valid span. A pino `mixin`. */
export function traceLogFields(): { trace_id?: string; span_id?: string; trace_flags?: string } {
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const spanContext = span.spanContext();
  if (!isSpanContextValid(spanContext)) return {};
  return {
    trace_id: spanContext.traceId,
    span_id: spanContext.spanId,
    trace_flags: spanContext.traceFlags.toString(16).padStart(2, '0'),
  };
}
