// The cluster bench's subscribers: WebSocket connections to an api's /v1/ws, each multiplexing many sessions, and
// per session and subscriber a Track that checks the events' order and text and notes when the run started and ended.

import WebSocket from 'ws';

// Subscribers

/** One session as one subscriber saw it. */
export class Track {
  snapshotSeq: number | null = null;
  /** When the run's first event arrived (performance.now). */
  startedAt: number | null = null;
  firstSeq: number | null = null;
  lastSeq: number | null = null;
  text = '';
  deltaEvents = 0;
  /** Events of any type after the snapshot. */
  events = 0;
  originalDeltas = 0;
  deltaBytes = 0;
  finalTurn = false;
  done = false;
  doneAt: number | null = null;
  readonly problems: string[] = [];

  constructor(readonly api: string) {}

  onEvent(frame: EventFrame, bytes: number): void {
    if (frame.event === 'snapshot') {
      if (this.snapshotSeq !== null) this.problems.push('a second snapshot');
      this.snapshotSeq = frame.seq;
      return;
    }
    if (this.snapshotSeq === null) this.problems.push(`${frame.event} #${frame.seq} before the snapshot`);
    if (this.lastSeq === null) {
      // Subscribed before the prompt: the run's first event (its `status`) is the first after the snapshot, and
      // follows the snapshot's seq directly unless the session had no seq yet (a fresh sequence starts at the
      // publisher's clock).
      this.firstSeq = frame.seq;
      this.startedAt = performance.now();
      if (frame.event !== 'status')
        this.problems.push(`first event ${frame.event} #${frame.seq}, not status`);
      if (this.snapshotSeq && frame.seq !== this.snapshotSeq + 1) {
        this.problems.push(`first event #${frame.seq} after snapshot #${this.snapshotSeq}`);
      }
    } else if (frame.seq !== this.lastSeq + 1) {
      this.problems.push(`${frame.event} #${frame.seq} after #${this.lastSeq}`);
    }
    this.lastSeq = frame.seq;
    this.events++;
    const data = frame.data as Record<string, unknown>;
    switch (frame.event) {
      case 'text_delta': {
        const delta = String(data.delta);
        this.text += delta;
        this.deltaEvents++;
        this.originalDeltas += delta.match(/\S+/g)?.length ?? 0;
        this.deltaBytes += bytes;
        break;
      }
      case 'turn':
        this.finalTurn = data.stop === 'stop';
        break;
      case 'store':
        if (this.finalTurn && data.kind === 'tree') {
          if (data.ok !== true) this.problems.push(`commit failed: ${String(data.error)}`);
          this.markDone();
        }
        break;
      case 'error':
      case 'cancelled':
        this.problems.push(`${frame.event}: ${JSON.stringify(data).slice(0, 200)}`);
        this.markDone();
        break;
    }
  }

  private markDone(): void {
    if (this.done) return;
    this.done = true;
    this.doneAt = performance.now();
  }
}

export interface EventFrame {
  type: 'event';
  sessionId: string;
  seq: number;
  event: string;
  data: unknown;
  at: number;
}

type Frame =
  | EventFrame
  | { type: 'reply'; ref?: string; ok: boolean; error?: { code: string; message: string } }
  | { type: 'end'; sessionId: string; reason: string }
  | { type: 'error'; error: { code: string; message: string } };

/** Emit -> receipt latencies of text_delta events, in ms, while open. */
export class LatencyLog {
  open = false;
  private values: Float64Array;
  private length = 0;
  /** Where the steady phase (every prompt answered) starts in `values`. */
  private steadyFrom = 0;

  constructor(capacity: number) {
    this.values = new Float64Array(Math.max(16, capacity));
  }

  add(ms: number): void {
    if (!this.open) return;
    if (this.length === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.length++] = ms;
  }

  markSteady(): void {
    this.steadyFrom = this.length;
  }

  sorted(phase: 'all' | 'steady' = 'all'): Float64Array {
    return this.values.slice(phase === 'steady' ? this.steadyFrom : 0, this.length).sort();
  }
}

/** A WebSocket connection to /v1/ws multiplexing many sessions; events go to their session's Track. */
export class BenchSocket {
  /** The api cut this connection as a slow consumer. */
  cut = false;
  private nextRef = 1;
  private readonly replies = new Map<string, { resolve: () => void; reject: (err: Error) => void }>();
  private readonly tracks = new Map<string, Track>();

  private constructor(
    private readonly socket: WebSocket,
    latencies: LatencyLog,
  ) {
    socket.on('message', (raw: WebSocket.RawData) => {
      const receivedAt = Date.now();
      const bytes = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
      const text = bytes.toString('utf8');
      const frame = JSON.parse(text) as Frame;
      if (frame.type === 'event') {
        if (frame.event === 'text_delta') latencies.add(receivedAt - frame.at);
        this.tracks.get(frame.sessionId)?.onEvent(frame, bytes.length);
      } else if (frame.type === 'reply' && frame.ref !== undefined) {
        const waiter = this.replies.get(frame.ref);
        this.replies.delete(frame.ref);
        if (frame.ok) waiter?.resolve();
        else waiter?.reject(new Error(`${frame.error?.code}: ${frame.error?.message}`));
      } else if (frame.type === 'end') {
        this.tracks.get(frame.sessionId)?.problems.push(`subscription ended: ${frame.reason}`);
      } else if (frame.type === 'error') {
        if (frame.error.code === 'slow_consumer') this.cut = true;
        console.error(`websocket error frame: ${frame.error.code}: ${frame.error.message}`);
      }
    });
  }

  static connect(apiUrl: string, key: string, latencies: LatencyLog): Promise<BenchSocket> {
    const url = new URL('/v1/ws', apiUrl.replace(/^http/, 'ws'));
    url.searchParams.set('token', key);
    const socket = new WebSocket(url, { perMessageDeflate: false });
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(new BenchSocket(socket, latencies)));
      socket.once('error', reject);
    });
  }

  subscribe(sessionId: string, track: Track): Promise<void> {
    this.tracks.set(sessionId, track);
    const ref = `s${this.nextRef++}`;
    return new Promise((resolve, reject) => {
      this.replies.set(ref, { resolve, reject });
      this.socket.send(JSON.stringify({ op: 'subscribe', ref, sessionId }));
    });
  }

  close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.close(1000, 'bench done');
    });
  }
}

/** The most tracks between their first event and their end at one moment. */
export function peakOverlap(tracks: readonly Track[]): number {
  const edges: Array<[number, number]> = [];
  for (const t of tracks) {
    if (t.startedAt === null) continue;
    edges.push([t.startedAt, 1], [t.doneAt ?? Number.POSITIVE_INFINITY, -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let peak = 0;
  for (const [, step] of edges) peak = Math.max(peak, (now += step));
  return peak;
}
