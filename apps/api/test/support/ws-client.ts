// A small WebSocket client for end-to-end tests of /v1/ws: JSON frames collected as they arrive, commands sent
// with a fresh `ref` and answered by their reply frame, and the close code the server chose.

import WebSocket from 'ws';
import type { SessionEventType } from '@canopy/core';
import { eventually } from '@canopy/testing';

export interface WsEventFrame {
  type: 'event';
  sessionId: string;
  seq: number;
  event: SessionEventType;
  /** The event's data (SessionEventMap[event]); tests read it loosely and compare it with expect. */
  data: Record<string, unknown>;
  /** When the event was published (ms since the epoch). */
  at: number;
}

export interface WsError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export interface WsReplyFrame<T = unknown> {
  type: 'reply';
  ref?: string | number;
  ok: boolean;
  data?: T;
  error?: WsError;
}

/** Every frame the server sends. */
export type WsFrame =
  | WsEventFrame
  | WsReplyFrame
  | { type: 'end'; sessionId: string; reason: string }
  | { type: 'activity'; event: string; data: Record<string, unknown> }
  | { type: 'error'; error: WsError };

/** A frame found by a predicate that is no type guard: any frame, every field optional. */
export interface WsAnyFrame {
  type: WsFrame['type'];
  ref?: string | number;
  ok?: boolean;
  data?: unknown;
  error?: WsError;
  sessionId?: string;
  seq?: number;
  event?: string;
  reason?: string;
}

export interface WsClose {
  code: number;
  reason: string;
}

/** `ws://` URL of the WebSocket endpoint of an app at `httpUrl`, with `?token=` when given. */
export function wsUrl(httpUrl: string, token?: string): string {
  const url = new URL('/v1/ws', httpUrl.replace(/^http/, 'ws'));
  if (token !== undefined) url.searchParams.set('token', token);
  return url.toString();
}

let nextRef = 1;

export class WsClient {
  /** Every frame received, parsed, in arrival order. */
  readonly frames: WsFrame[] = [];
  /** Resolves when the connection closes, with the code and reason the server sent. */
  readonly closed: Promise<WsClose>;
  closeInfo: WsClose | null = null;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data: WebSocket.RawData) => {
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      this.frames.push(JSON.parse(bytes.toString('utf8')));
    });
    this.closed = new Promise((resolve) =>
      socket.on('close', (code: number, reason: Buffer) => {
        this.closeInfo = { code, reason: reason.toString('utf8') };
        resolve(this.closeInfo);
      }),
    );
  }

  /** Opens a connection; rejects when the upgrade fails (refused, not a WebSocket endpoint). */
  static connect(url: string, headers: Record<string, string> = {}): Promise<WsClient> {
    const socket = new WebSocket(url, { headers });
    const client = new WsClient(socket);
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(client));
      socket.once('error', reject);
      socket.once('unexpected-response', (_req, res) =>
        reject(new Error(`WebSocket upgrade refused: HTTP ${res.statusCode}`)),
      );
    });
  }

  get isOpen(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  send(frame: unknown): void {
    this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** Sends `{op, ref, ...body}` and resolves with its reply frame. */
  async request<T = unknown>(
    op: string,
    body: Record<string, unknown> = {},
    timeoutMs = 5_000,
  ): Promise<WsReplyFrame<T>> {
    const ref = `r${nextRef++}`;
    this.send({ op, ref, ...body });
    return this.waitForFrame((f): f is WsReplyFrame<T> => f.type === 'reply' && f.ref === ref, timeoutMs);
  }

  /** Session event frames received so far (of one session, when named). */
  events(sessionId?: string): WsEventFrame[] {
    return this.frames.filter(
      (f): f is WsEventFrame => f.type === 'event' && (sessionId === undefined || f.sessionId === sessionId),
    );
  }

  /** The first frame (received so far or later) matching `pred`, within the deadline. */
  waitForFrame<T extends WsFrame>(pred: (f: WsFrame) => f is T, timeoutMs?: number): Promise<T>;
  waitForFrame(pred: (f: WsFrame) => boolean, timeoutMs?: number): Promise<WsAnyFrame>;
  async waitForFrame(pred: (f: WsFrame) => boolean, timeoutMs = 5_000): Promise<WsFrame> {
    return eventually(
      () => {
        const found = this.frames.find(pred);
        if (found === undefined) {
          const seen = this.frames.map((f) => (f.type === 'event' ? f.event : f.type)).join(',');
          throw new Error(`no matching WebSocket frame yet (have ${seen})`);
        }
        return found;
      },
      { timeoutMs },
    );
  }

  waitForEvent(pred: (e: WsEventFrame) => boolean, timeoutMs = 5_000): Promise<WsEventFrame> {
    return this.waitForFrame((f): f is WsEventFrame => f.type === 'event' && pred(f), timeoutMs);
  }

  /** Closes from the client side and waits until the socket is closed. */
  async close(): Promise<WsClose> {
    if (this.socket.readyState === WebSocket.CLOSED) return this.closeInfo ?? { code: 1006, reason: '' };
    this.socket.close(1000, 'bye');
    return this.closed;
  }

  /** Drops the connection without a closing handshake (a client that vanished). */
  terminate(): void {
    this.socket.terminate();
  }
}
