// The otel bench's OTLP/HTTP endpoint: it reads each export, answers 200 and counts requests and bytes per signal
// (traces, metrics), nothing more while the service is measured: a collector does its decoding on a machine of its
// own in a deployment, so decoding here would charge the traced side's machine with work that is not the
// service's. The trace bodies are kept (up to KEPT_BYTES) so that their spans can be counted once the measured
// windows are over (otlp-spans.ts).

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { countSpans, SpanCounts } from './otlp-spans';

/** Trace bodies kept for counting their spans later; past it, spans are not counted (bytes still are). */
const KEPT_BYTES = 512 * 2 ** 20;

/** What the sink received over a stretch of time. */
export interface SinkTally {
  traceRequests: number;
  traceBytes: number;
  metricRequests: number;
  metricBytes: number;
  /** The trace bodies received, in order; null when KEPT_BYTES was reached. */
  bodies: Buffer[] | null;
}

function emptyTally(): SinkTally {
  return { traceRequests: 0, traceBytes: 0, metricRequests: 0, metricBytes: 0, bodies: [] };
}

export class OtlpSink {
  private tally = emptyTally();
  private keptBytes = 0;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpSink> {
    const server = createServer();
    const sink = new OtlpSink(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      req.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        bytes += chunk.length;
      });
      req.on('end', () => {
        sink.received(req.url ?? '', chunks, bytes);
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return sink;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** What was received since the last take (or the start), and a new tally from now. */
  take(): SinkTally {
    const taken = this.tally;
    this.tally = emptyTally();
    return taken;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private received(path: string, chunks: Buffer[], bytes: number): void {
    const t = this.tally;
    if (path.startsWith('/v1/metrics')) {
      t.metricRequests++;
      t.metricBytes += bytes;
      return;
    }
    t.traceRequests++;
    t.traceBytes += bytes;
    if (t.bodies && this.keptBytes + bytes <= KEPT_BYTES) {
      t.bodies.push(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes));
      this.keptBytes += bytes;
    } else {
      t.bodies = null;
    }
  }
}

/** The spans of a tally's kept bodies; null when its bodies were not all kept. Frees the bodies. */
export function spansOf(tally: SinkTally, into = new SpanCounts()): SpanCounts | null {
  if (!tally.bodies) return null;
  for (const body of tally.bodies) countSpans(body, into);
  tally.bodies = [];
  return into;
}
