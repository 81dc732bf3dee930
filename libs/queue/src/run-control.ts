// Reaching other processes of the deployment. Cancel is a request every executor hears (with its reason: a cancel,
// or a newer prompt's interrupt, after which the run keeps what it had); the one holding the run aborts it and
// acknowledges. No acknowledgement within the timeout means nobody executes it (it is paused, still
// queued, or its worker died) and the caller ends it itself. Close is a notice every process hears: each stops
// serving the session live (closed, deleted, idle shutdown decided for the whole deployment).

import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/** A cancel keeps nothing more of the run; an interrupt (a newer prompt's) has it keep what it had. */
export type CancelReason = 'cancelled' | 'interrupted';

export type CancelHandler = (runId: string, reason: CancelReason) => boolean;

export type SessionCloseReason = 'close' | 'delete' | 'idle' | 'expired';
export type CloseHandler = (tenantId: string, sessionId: string, reason: SessionCloseReason) => Promise<void>;

export interface RunControl {
  /** True when the executor holding the run acknowledged within timeoutMs (it is aborting it, for `reason`). */
  requestCancel(runId: string, timeoutMs: number, reason?: CancelReason): Promise<boolean>;
  /** The executor side: the handler aborts the run if this process holds it, and says whether it did. */
  onCancel(handler: CancelHandler): void;
  /**
   * Every process stops serving the session live. Resolves once this process has (others follow as the notice
   * reaches them).
   */
  closeEverywhere(tenantId: string, sessionId: string, reason: SessionCloseReason): Promise<void>;
  /** What this process does on a close notice (its own included). */
  onClose(handler: CloseHandler): void;
  close(): Promise<void>;
}

export const RUN_CONTROL = Symbol('RUN_CONTROL');

/** One process: the request goes straight to the local executor. */
export class InProcessRunControl implements RunControl {
  private handler: CancelHandler | null = null;
  private closeHandler: CloseHandler | null = null;

  requestCancel(runId: string, _timeoutMs?: number, reason: CancelReason = 'cancelled'): Promise<boolean> {
    return Promise.resolve(this.handler?.(runId, reason) ?? false);
  }

  onCancel(handler: CancelHandler): void {
    this.handler = handler;
  }

  async closeEverywhere(tenantId: string, sessionId: string, reason: SessionCloseReason): Promise<void> {
    await this.closeHandler?.(tenantId, sessionId, reason);
  }

  onClose(handler: CloseHandler): void {
    this.closeHandler = handler;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

interface CancelRequest {
  runId: string;
  requestId: string;
  replyTo: string;
  /** Absent from a process that knows no interrupts: a cancel. */
  reason?: CancelReason;
}

interface CloseNotice {
  close: { tenantId: string; sessionId: string; reason: SessionCloseReason };
  from: string;
}

/**
 * Redis pub/sub: cancel requests and close notices on `<prefix>:run-control`, acknowledgements on the asking
 * instance's own channel `<prefix>:run-control:ack:<instance>`. Delivery is best effort by nature; the cancel
 * timeout covers the rest, and a close notice lost with a dead instance does not matter (its presences expire).
 */
export class RedisRunControl implements RunControl {
  private readonly pending = new Map<string, (ok: boolean) => void>();
  private handler: CancelHandler | null = null;
  private closed = false;
  private closeHandler: CloseHandler | null = null;
  private readonly requests: string;
  private readonly acks: string;
  private ready: Promise<void>;

  constructor(
    private readonly options: {
      redis: Redis | Cluster;
      subscriber: Redis | Cluster;
      prefix: string;
      instanceId: string;
      /** Told of the subscriber connection's errors (Redis away: ioredis reconnects and resubscribes). */
      onError?: (err: Error) => void;
    },
  ) {
    this.requests = `${options.prefix}:run-control`;
    this.acks = `${options.prefix}:run-control:ack:${options.instanceId}`;
    options.subscriber.on('message', (channel: string, text: string) => this.onMessage(channel, text));
    // Without a listener ioredis prints every failed reconnect as an "Unhandled error event" on stderr.
    options.subscriber.on('error', (err: Error) => options.onError?.(err));
    this.ready = this.subscribe();
  }

  /**
   * Subscribes, trying again while Redis does not answer (a command timeout must neither crash the process as
   * an unhandled rejection nor leave cancels failing for good).
   */
  private async subscribe(): Promise<void> {
    for (let attempt = 0; !this.closed; attempt++) {
      try {
        await this.options.subscriber.subscribe(this.requests, this.acks);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** attempt)).unref());
      }
    }
  }

  async requestCancel(
    runId: string,
    timeoutMs: number,
    reason: CancelReason = 'cancelled',
  ): Promise<boolean> {
    await this.ready;
    const requestId = randomUUID();
    const answered = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(requestId);
        resolve(false);
      }, timeoutMs);
      timer.unref();
      this.pending.set(requestId, (ok) => {
        clearTimeout(timer);
        this.pending.delete(requestId);
        resolve(ok);
      });
    });
    const request: CancelRequest = { runId, requestId, replyTo: this.acks, reason };
    await this.options.redis.publish(this.requests, JSON.stringify(request));
    return answered;
  }

  onCancel(handler: CancelHandler): void {
    this.handler = handler;
  }

  async closeEverywhere(tenantId: string, sessionId: string, reason: SessionCloseReason): Promise<void> {
    await this.ready;
    const notice: CloseNotice = { close: { tenantId, sessionId, reason }, from: this.options.instanceId };
    // Others hear it on the channel; this process acts at once (and ignores its own notice).
    await this.options.redis.publish(this.requests, JSON.stringify(notice));
    await this.closeHandler?.(tenantId, sessionId, reason);
  }

  onClose(handler: CloseHandler): void {
    this.closeHandler = handler;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const resolve of this.pending.values()) resolve(false);
    await this.options.subscriber.unsubscribe(this.requests, this.acks).catch(() => undefined);
  }

  private onMessage(channel: string, text: string): void {
    let message: {
      runId?: unknown;
      requestId?: unknown;
      replyTo?: unknown;
      reason?: unknown;
      close?: unknown;
      from?: unknown;
    };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      return;
    }
    if (channel === this.acks && typeof message.requestId === 'string') {
      this.pending.get(message.requestId)?.(true);
      return;
    }
    if (channel !== this.requests) return;
    if (message.close !== undefined) {
      this.onCloseNotice(message as Partial<CloseNotice>);
      return;
    }
    if (!this.handler) return;
    const { runId, requestId, replyTo } = message;
    if (typeof runId !== 'string' || typeof requestId !== 'string' || typeof replyTo !== 'string') return;
    if (this.handler(runId, message.reason === 'interrupted' ? 'interrupted' : 'cancelled')) {
      // Unacknowledged, the requester ends the run itself after its timeout: nothing more to do on failure.
      this.options.redis.publish(replyTo, JSON.stringify({ requestId })).catch(() => undefined);
    }
  }

  private onCloseNotice(notice: Partial<CloseNotice>): void {
    const c = notice.close;
    if (notice.from === this.options.instanceId || !c || !this.closeHandler) return;
    if (typeof c.tenantId !== 'string' || typeof c.sessionId !== 'string') return;
    if (!['close', 'delete', 'idle', 'expired'].includes(c.reason)) return;
    this.closeHandler(c.tenantId, c.sessionId, c.reason).catch(() => undefined);
  }
}
