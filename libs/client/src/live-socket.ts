// One WebSocket connection to /v1/ws carrying many session subscriptions, the activity feed and commands. It
// reconnects by itself and resubscribes every session after the last seq it delivered (and again after the
// server ended a subscription, unless the session was deleted), so a listener sees no gap and no duplicate. It
// does not reconnect once its credential is refused (revoked or expired: 4401, or at connection 1008
// unauthorized; the tenant disabled: 4403 or 1008 tenant_disabled): it stays closed, with `error` saying why.
// Browsers have a WebSocket; in Node 20 pass one (e.g. the `ws` package's).

import type { ActivityEvent, ActivityEventType, SessionEventBody, SessionEventType } from '@canopy/core';

import { CanopyError, type ErrorCode } from './errors';

/** The part of the WebSocket API the client uses (the browser's and the `ws` package's both fit). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

/**
 * A WebSocket class. Typed loosely (instances are used as WebSocketLike) so that both the browser's and the `ws`
 * package's classes fit, whatever their event types.
 */
export type WebSocketConstructor = new (url: string) => object;

export interface LiveSocketOptions {
  /** Default: the global WebSocket (browsers, Node 22+). */
  WebSocket?: WebSocketConstructor;
  /** First delay before reconnecting, doubled up to 10 s while attempts fail (default 500 ms). */
  reconnectDelayMs?: number;
  /** How long a command waits for its reply (default 60 s). */
  replyTimeoutMs?: number;
}

export type SocketState = 'connecting' | 'open' | 'closed';

export type CommandOp = 'prompt' | 'branch' | 'navigate' | 'cancel' | 'resume';

interface SessionSub {
  listener: (event: SessionEventBody) => void;
  mode: 'controller' | 'observer';
  /** The last seq delivered; resubscriptions start after it. */
  last: number | undefined;
}

interface Pending {
  resolve: (data: unknown) => void;
  reject: (err: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

type ServerFrame =
  | { type: 'event'; sessionId: string; seq: number; event: SessionEventType; data: unknown }
  | { type: 'activity'; event: ActivityEventType; data: Record<string, unknown> }
  | { type: 'reply'; ref?: string | number; ok: boolean; data?: unknown; error?: ApiError }
  | { type: 'end'; sessionId: string; reason: string }
  | { type: 'error'; error: ApiError };

interface ApiError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

const OPEN = 1;
const MAX_RECONNECT_DELAY_MS = 10_000;

/** Close codes of a connection whose credential stopped being valid (the server's reason names the code). */
const CREDENTIAL_CLOSE_CODES = new Set([4401, 4403]);
/** Reasons of a connection refused for its credential when it connected (close code 1008). */
const CREDENTIAL_REFUSALS = new Set(['unauthorized', 'tenant_disabled']);

export class LiveSocket {
  private socket: WebSocketLike | null = null;
  private state: SocketState = 'connecting';
  private closedByUser = false;
  private delay: number;
  private nextRef = 1;
  private readonly sessions = new Map<string, SessionSub>();
  private readonly activityListeners = new Set<(event: ActivityEvent) => void>();
  private readonly pending = new Map<string, Pending>();
  private readonly stateListeners = new Set<(state: SocketState) => void>();
  private readonly Ctor: WebSocketConstructor;
  private refusal: CanopyError | null = null;
  /** The message of the last error frame (it comes before the server closes a connection). */
  private lastErrorMessage: string | null = null;

  constructor(
    private readonly url: () => Promise<string>,
    private readonly options: LiveSocketOptions = {},
  ) {
    const Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!Ctor) throw new TypeError('no WebSocket: pass options.WebSocket (e.g. the ws package in Node 20)');
    this.Ctor = Ctor;
    this.delay = options.reconnectDelayMs ?? 500;
    void this.connect();
  }

  get status(): SocketState {
    return this.state;
  }

  /**
   * Why the connection closed for good, when the server refused its credential (code `unauthorized`: revoked or
   * expired; `tenant_disabled`); null otherwise. Connect again with a valid credential.
   */
  get error(): CanopyError | null {
    return this.refusal;
  }

  /** Calls `listener` on every change of the connection's state; answers how to stop. */
  onState(listener: (state: SocketState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  /**
   * Subscribes to a session's events (a snapshot first unless `after`); answers how to unsubscribe. One
   * subscription per session on a connection.
   */
  subscribe(
    sessionId: string,
    listener: (event: SessionEventBody) => void,
    options: { mode?: 'controller' | 'observer'; after?: number } = {},
  ): () => void {
    const sub: SessionSub = { listener, mode: options.mode ?? 'controller', last: options.after };
    this.sessions.set(sessionId, sub);
    if (this.state === 'open') this.sendSubscribe(sessionId, sub);
    return () => {
      if (this.sessions.get(sessionId) !== sub) return;
      this.sessions.delete(sessionId);
      if (this.state === 'open') this.trySend({ op: 'unsubscribe', sessionId });
    };
  }

  /** The activity feed (tenant keys and the admin key); answers how to stop. */
  activity(listener: (event: ActivityEvent) => void): () => void {
    this.activityListeners.add(listener);
    if (this.activityListeners.size === 1 && this.state === 'open') this.trySend({ op: 'activity' });
    return () => this.activityListeners.delete(listener);
  }

  /** Sends a command (`{op, sessionId, ...body}` as API.md describes) and answers its reply's data. */
  command<T = unknown>(op: CommandOp, sessionId: string, body: Record<string, unknown> = {}): Promise<T> {
    if (this.state !== 'open') {
      return Promise.reject(
        new CanopyError({ code: 'network_error', message: 'the WebSocket is not connected', status: 0 }),
      );
    }
    return this.request<T>({ ...body, op, sessionId });
  }

  close(): void {
    this.closedByUser = true;
    this.setState('closed');
    this.socket?.close(1000, 'client closed');
    for (const [ref, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new CanopyError({ code: 'aborted', message: 'the WebSocket was closed', status: 0 }));
      this.pending.delete(ref);
    }
  }

  private async connect(): Promise<void> {
    if (this.closedByUser) return;
    this.setState('connecting');
    let socket: WebSocketLike;
    try {
      socket = new this.Ctor(await this.url()) as WebSocketLike;
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    socket.onopen = () => {
      this.delay = this.options.reconnectDelayMs ?? 500;
      this.setState('open');
      for (const [sessionId, sub] of this.sessions) this.sendSubscribe(sessionId, sub);
      if (this.activityListeners.size > 0) this.trySend({ op: 'activity' });
    };
    socket.onmessage = (event) => this.onFrame(event.data);
    socket.onerror = () => undefined; // onclose follows
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      this.socket = null;
      const refused = credentialRefusal(event, this.lastErrorMessage);
      this.lastErrorMessage = null;
      for (const [ref, p] of this.pending) {
        clearTimeout(p.timer);
        p.reject(
          refused ?? new CanopyError({ code: 'network_error', message: 'the WebSocket closed', status: 0 }),
        );
        this.pending.delete(ref);
      }
      if (this.closedByUser) return;
      if (refused) {
        // The same credential would be refused again: reconnecting would only loop.
        this.refusal = refused;
        this.closedByUser = true;
        this.setState('closed');
        return;
      }
      this.scheduleReconnect();
    };
  }

  private scheduleReconnect(): void {
    this.setState('connecting');
    setTimeout(() => void this.connect(), this.delay);
    this.delay = Math.min(MAX_RECONNECT_DELAY_MS, this.delay * 2);
  }

  private sendSubscribe(sessionId: string, sub: SessionSub): void {
    this.request({
      op: 'subscribe',
      sessionId,
      mode: sub.mode,
      ...(sub.last !== undefined ? { after: sub.last } : {}),
    }).catch(() => undefined); // a refused subscription (not_found, ...) delivers nothing
  }

  private request<T>(frame: Record<string, unknown>): Promise<T> {
    const ref = `r${this.nextRef++}`;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(ref);
        reject(
          new CanopyError({ code: 'network_error', message: `no reply to ${String(frame.op)}`, status: 0 }),
        );
      }, this.options.replyTimeoutMs ?? 60_000);
      this.pending.set(ref, { resolve: resolve as (data: unknown) => void, reject, timer });
      if (!this.trySend({ ...frame, ref })) {
        clearTimeout(timer);
        this.pending.delete(ref);
        reject(
          new CanopyError({ code: 'network_error', message: 'the WebSocket is not connected', status: 0 }),
        );
      }
    });
  }

  private trySend(frame: Record<string, unknown>): boolean {
    if (!this.socket || this.socket.readyState !== OPEN) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  private onFrame(raw: unknown): void {
    let frame: ServerFrame;
    try {
      frame = JSON.parse(typeof raw === 'string' ? raw : String(raw)) as ServerFrame;
    } catch {
      return;
    }
    switch (frame.type) {
      case 'event': {
        const sub = this.sessions.get(frame.sessionId);
        if (!sub) return;
        if (frame.event !== 'snapshot' && sub.last !== undefined && frame.seq <= sub.last) return;
        sub.last = frame.seq;
        sub.listener({
          seq: frame.seq,
          sessionId: frame.sessionId,
          type: frame.event,
          data: frame.data,
        } as SessionEventBody);
        return;
      }
      case 'activity': {
        const { tenantId, at, ...data } = frame.data;
        const event = { tenantId, type: frame.event, data, at } as ActivityEvent;
        for (const listener of [...this.activityListeners]) listener(event);
        return;
      }
      case 'reply': {
        const p = frame.ref !== undefined ? this.pending.get(String(frame.ref)) : undefined;
        if (!p) return;
        this.pending.delete(String(frame.ref));
        clearTimeout(p.timer);
        if (frame.ok) p.resolve(frame.data);
        else p.reject(apiError(frame.error));
        return;
      }
      case 'end': {
        const sub = this.sessions.get(frame.sessionId);
        if (!sub) return;
        // A deleted session is over; any other end (close, idle shutdown) is followed by a resubscription.
        if (frame.reason === 'delete') this.sessions.delete(frame.sessionId);
        else if (this.state === 'open') {
          this.sendSubscribe(frame.sessionId, sub);
        }
        return;
      }
      case 'error':
        this.lastErrorMessage = frame.error?.message ?? null;
        return;
    }
  }

  private setState(state: SocketState): void {
    if (this.state === state) return;
    this.state = state;
    for (const listener of [...this.stateListeners]) listener(state);
  }
}

/** The error of a close that refused the connection's credential; null for any other close. */
function credentialRefusal(
  event: { code: number; reason: string } | undefined,
  message: string | null,
): CanopyError | null {
  if (!event || !CREDENTIAL_REFUSALS.has(event.reason)) return null;
  if (!CREDENTIAL_CLOSE_CODES.has(event.code) && event.code !== 1008) return null;
  return new CanopyError({
    code: event.reason as ErrorCode,
    message: message ?? `the server closed the WebSocket: ${event.reason}`,
    status: 0,
  });
}

function apiError(error: ApiError | undefined): CanopyError {
  return new CanopyError({
    code: (error?.code ?? 'internal') as ErrorCode,
    message: error?.message ?? 'the command failed',
    status: 0,
    details: error?.details ?? null,
  });
}
