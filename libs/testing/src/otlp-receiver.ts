// A local OTLP/HTTP receiver for tests: what an OpenTelemetry collector would get from Canopy. It accepts traces and
// metrics as OTLP/JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json), decoded into flat spans and metric names, and keeps
// OTLP/protobuf bodies as received (http/protobuf), in which a test finds the ids and names it expects.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from './eventually';

/** A span as the receiver decoded it (ids in hex, attributes as plain values). */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string; attributes: Record<string, unknown> }>;
  status: { code?: number; message?: string };
}

export interface ReceivedMetric {
  service: string;
  name: string;
  /** The attributes of each data point. */
  points: Array<Record<string, unknown>>;
}

interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
}
type KeyValues = Array<{ key: string; value: AnyValue }> | undefined;

function valueOf(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function serviceOf(kvs: KeyValues): string {
  const name = attributesOf(kvs)['service.name'];
  return typeof name === 'string' ? name : '';
}

function attributesOf(kvs: KeyValues): Record<string, unknown> {
  return Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

/** OTLP/JSON ids are hex; some encoders send base64: both end as hex here. */
function hexId(id: string | undefined): string {
  if (!id) return '';
  return /^[0-9a-f]*$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly metrics: ReceivedMetric[] = [];
  /** Bodies received as OTLP/protobuf, by path (/v1/traces, /v1/metrics). */
  readonly protobuf: Array<{ path: string; body: Buffer }> = [];
  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    const receiver = new OtlpReceiver(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const path = (req.url ?? '').split('?')[0] ?? '';
        const type = String(req.headers['content-type'] ?? '');
        if (type.includes('protobuf')) {
          receiver.protobuf.push({ path, body });
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
          return;
        }
        try {
          const json = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
          if (path === '/v1/traces') receiver.takeSpans(json);
          if (path === '/v1/metrics') receiver.takeMetrics(json);
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } catch {
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Waits until `find` returns something for the spans received so far (a deadline, no fixed sleep). */
  async waitForSpans<T>(
    find: (spans: ReceivedSpan[]) => T | undefined | null | false,
    timeoutMs = 20_000,
  ): Promise<T> {
    let found: T | undefined | null | false;
    await eventually(
      () => {
        found = find(this.spans);
        if (!found) throw new Error(`not received yet (${this.spans.length} spans so far)`);
      },
      { timeoutMs },
    );
    return found as T;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private takeSpans(json: Record<string, unknown>): void {
    const resourceSpans = (json.resourceSpans ?? []) as Array<{
      resource?: { attributes?: KeyValues };
      scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
    }>;
    for (const rs of resourceSpans) {
      const service = serviceOf(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          this.spans.push({
            service,
            traceId: hexId(s.traceId as string),
            spanId: hexId(s.spanId as string),
            parentSpanId: hexId(s.parentSpanId as string | undefined),
            name: String(s.name),
            kind: Number(s.kind ?? 0),
            attributes: attributesOf(s.attributes as KeyValues),
            links: ((s.links ?? []) as Array<Record<string, unknown>>).map((l) => ({
              traceId: hexId(l.traceId as string),
              spanId: hexId(l.spanId as string),
              attributes: attributesOf(l.attributes as KeyValues),
            })),
            status: (s.status ?? {}),
          });
        }
      }
    }
  }

  private takeMetrics(json: Record<string, unknown>): void {
    const resourceMetrics = (json.resourceMetrics ?? []) as Array<{
      resource?: { attributes?: KeyValues };
      scopeMetrics?: Array<{ metrics?: Array<Record<string, unknown>> }>;
    }>;
    for (const rm of resourceMetrics) {
      const service = serviceOf(rm.resource?.attributes);
      for (const sm of rm.scopeMetrics ?? []) {
        for (const m of sm.metrics ?? []) {
          const data = (m.histogram ?? m.sum ?? m.gauge ?? m.exponentialHistogram ?? {}) as {
            dataPoints?: Array<{ attributes?: KeyValues }>;
          };
          this.metrics.push({
            service,
            name: String(m.name),
            points: (data.dataPoints ?? []).map((p) => attributesOf(p.attributes)),
          });
        }
      }
    }
  }
}

/** The spans of one trace as a tree printout (name per line, indented by depth): for failure messages. */
export function traceTree(spans: readonly ReceivedSpan[], traceId: string): string {
  const mine = spans.filter((s) => s.traceId === traceId);
  const ids = new Set(mine.map((s) => s.spanId));
  const lines: string[] = [];
  const walk = (parent: string, depth: number) => {
    for (const s of mine.filter((x) => x.parentSpanId === parent)) {
      lines.push(`${'  '.repeat(depth)}${s.name} [${s.service}]`);
      walk(s.spanId, depth + 1);
    }
  };
  for (const root of mine.filter((s) => !ids.has(s.parentSpanId))) {
    lines.push(`${root.name} [${root.service}] (parent ${root.parentSpanId || 'none'})`);
    walk(root.spanId, 1);
  }
  return lines.join('\n');
}
