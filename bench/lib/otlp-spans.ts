// The spans of an OTLP/protobuf trace export, counted by name and kind, for the otel bench's spans per run. Read
// after the measured windows from the bodies the sink kept (bench/lib/otlp-sink.ts), so no decoding runs while the
// traced service is measured. It walks the wire format down to each span's name and kind and skips everything
// else by its length: ExportTraceServiceRequest.resource_spans (1) -> ResourceSpans.scope_spans (2) ->
// ScopeSpans.scope (1: InstrumentationScope.name, 1) and spans (2) -> Span.name (5), Span.kind (6), the field
// numbers of opentelemetry-proto's trace/v1, stable since OTLP 1.0.

/** Span.kind's values (opentelemetry-proto trace/v1), as the API names them. */
const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];

/** Spans of one name, kind and instrumentation scope. */
export interface SpanTally {
  scope: string;
  name: string;
  kind: string;
  count: number;
}

/** Counts of spans by scope, name and kind, added up over export requests. */
export class SpanCounts {
  private readonly tallies = new Map<string, SpanTally>();
  total = 0;

  add(scope: string, name: string, kind: string): void {
    const key = `${scope}\u0000${name}\u0000${kind}`;
    const tally = this.tallies.get(key);
    if (tally) tally.count++;
    else this.tallies.set(key, { scope, name, kind, count: 1 });
    this.total++;
  }

  /** The tallies, most spans first. */
  list(): SpanTally[] {
    return [...this.tallies.values()].sort((a, b) => b.count - a.count || a.name.localeCompare(b.name));
  }
}

/** A protobuf message's fields, each as its number and, for a length-delimited one, its bytes. */
function* fields(buf: Uint8Array): Generator<{ field: number; bytes?: Uint8Array; varint?: number }> {
  let pos = 0;
  const varint = (): number => {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const byte = buf[pos++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
      shift += 7;
    }
  };
  while (pos < buf.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    switch (tag & 7) {
      case 0:
        yield { field, varint: varint() };
        break;
      case 1:
        pos += 8;
        break;
      case 2: {
        const length = varint();
        if (pos + length > buf.length) throw new Error('truncated field');
        yield { field, bytes: buf.subarray(pos, pos + length) };
        pos += length;
        break;
      }
      case 5:
        pos += 4;
        break;
      default:
        throw new Error(`wire type ${tag & 7} is not protobuf's`);
    }
  }
}

const utf8 = new TextDecoder();

/** Adds the spans of one ExportTraceServiceRequest body to counts. */
export function countSpans(body: Uint8Array, counts: SpanCounts): void {
  for (const resourceSpans of fields(body)) {
    if (resourceSpans.field !== 1 || !resourceSpans.bytes) continue;
    for (const scopeSpans of fields(resourceSpans.bytes)) {
      if (scopeSpans.field !== 2 || !scopeSpans.bytes) continue;
      let scope = '';
      const spans: Uint8Array[] = [];
      for (const f of fields(scopeSpans.bytes)) {
        if (f.field === 1 && f.bytes) {
          for (const s of fields(f.bytes)) if (s.field === 1 && s.bytes) scope = utf8.decode(s.bytes);
        } else if (f.field === 2 && f.bytes) spans.push(f.bytes);
      }
      for (const span of spans) {
        let name = '';
        let kind = 0;
        for (const f of fields(span)) {
          if (f.field === 5 && f.bytes) name = utf8.decode(f.bytes);
          else if (f.field === 6 && f.varint !== undefined) kind = f.varint;
        }
        counts.add(scope, name, KINDS[kind] ?? String(kind));
      }
    }
  }
}
