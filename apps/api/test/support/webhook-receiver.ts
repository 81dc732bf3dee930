// A local webhook receiver for end-to-end tests: verifies every request's Standard Webhooks signature with the
// endpoint's secret (the `standardwebhooks` library, as a receiver would), records each attempt, and answers as
// told: 200, a failure status, or never (a hung receiver). It counts the requests open at once (received, neither
// answered nor given up by the sender): how many attempts a sender has in flight to it.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedAttempt {
  id: string;
  type: string;
  data: Record<string, unknown>;
  verified: boolean;
  at: number;
}

export type ReceiverMode = 'ok' | 'fail' | 'hang' | 'redirect';

export class WebhookReceiver {
  readonly attempts: ReceivedAttempt[] = [];
  mode: ReceiverMode = 'ok';
  secret = '';
  /** The most requests open at once so far. */
  maxOpen = 0;
  /** Called with each attempt as it is recorded (before it is answered). */
  onAttempt: ((attempt: ReceivedAttempt) => void) | null = null;
  private readonly hung = new Set<ServerResponse>();
  private readonly pending = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<WebhookReceiver> {
    const holder: { receiver?: WebhookReceiver } = {};
    const server = createServer((req, res) => void holder.receiver!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    holder.receiver = new WebhookReceiver(server, `http://127.0.0.1:${port}/hook`);
    return holder.receiver;
  }

  /** The attempts at verified deliveries (each attempt once), by webhook-id. */
  delivered(): Map<string, ReceivedAttempt[]> {
    const out = new Map<string, ReceivedAttempt[]>();
    for (const a of this.attempts.filter((x) => x.verified)) out.set(a.id, [...(out.get(a.id) ?? []), a]);
    return out;
  }

  ofType(type: string): ReceivedAttempt[] {
    return this.attempts.filter((a) => a.type === type);
  }

  /** Requests open now: received and neither answered nor closed by the sender. */
  get open(): number {
    return this.pending.size;
  }

  /** Answers the hung requests still open with `status`. */
  answerHung(status: number): void {
    for (const res of this.hung) res.writeHead(status).end();
    this.hung.clear();
  }

  async close(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.pending.add(res);
    this.maxOpen = Math.max(this.maxOpen, this.pending.size);
    res.on('close', () => {
      this.pending.delete(res);
      this.hung.delete(res);
    });
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    let verified: boolean;
    try {
      new Webhook(this.secret).verify(body, req.headers as Record<string, string>);
      verified = true;
    } catch {
      verified = false;
    }
    const parsed = JSON.parse(body) as { type: string; data: Record<string, unknown> };
    const attempt = {
      id: String(req.headers['webhook-id']),
      type: parsed.type,
      data: parsed.data,
      verified,
      at: Date.now(),
    };
    this.attempts.push(attempt);
    this.onAttempt?.(attempt);
    if (this.mode === 'hang') {
      this.hung.add(res);
      return;
    }
    if (this.mode === 'redirect') {
      res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
      return;
    }
    res.writeHead(this.mode === 'ok' ? 200 : 500).end(this.mode === 'ok' ? 'ok' : 'nope');
  }
}
