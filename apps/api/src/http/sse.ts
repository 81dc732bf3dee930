// Server-Sent Events over a plain response: `id` / `event` / `data` frames, a retry hint, heartbeat comments
// so proxies keep the stream open, and an orderly close (with a reconnect hint on shutdown). Every open stream
// is tracked so a shutdown can close them all. A client that does not read is cut off once what waits for it
// passes the buffer limit (`end` {reason: "slow_consumer", reconnect: true}: it resumes with `after`), so its
// backlog never grows past the limit whatever it does. A stream lives no longer than the credential that opened it:
// revoked, expired or its tenant disabled, it ends with `end` {reason: "unauthorized" | "tenant_disabled",
// reconnect: false} (CredentialWatch).

import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { AuthedRequest, Grant } from '@canopy/auth';
import { InjectConfig, type CanopyConfig } from '@canopy/common';
import { CredentialWatch } from './credential-watch';

const HEARTBEAT_MS = 15_000;
/** How long a cut-off client has to take its last frames before its connection is destroyed. */
export const SLOW_CONSUMER_GRACE_MS = 1_000;

/**
 * What the registry tracks: an SSE stream of the API's own, or a frontend protocol's stream (the AI SDK's UI message
 * stream, AG-UI's events), each ending in its protocol's way.
 */
export interface TrackedStream {
  /** Ends the stream because its credential stopped being valid (or it fell behind). */
  cut(reason: { reason: string; reconnect: boolean }, force?: boolean): void;
  /** Ends the stream (a shutdown: with `reconnect`, the client should come back). */
  close(reason?: { reason: string; reconnect: boolean }): void;
  whenClosed(fn: () => void): void;
}

export class SseStream implements TrackedStream {
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly onClose: Array<() => void> = [];

  constructor(
    private readonly req: Request,
    private readonly res: Response,
    private readonly registry: SseRegistry,
  ) {
    res.status(200);
    res.setHeader('content-type', 'text/event-stream; charset=utf-8');
    res.setHeader('cache-control', 'no-cache, no-transform');
    res.setHeader('connection', 'keep-alive');
    res.setHeader('x-accel-buffering', 'no');
    res.flushHeaders();
    res.write('retry: 2000\n\n');
    this.heartbeat = setInterval(() => this.comment('ping'), HEARTBEAT_MS);
    this.heartbeat.unref();
    req.on('close', () => this.close());
    registry.add(this, (req as AuthedRequest).grant);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Runs when the stream closes, whoever closed it (client gone, session ended, shutdown). */
  whenClosed(fn: () => void): void {
    if (this.closed) fn();
    else this.onClose.push(fn);
  }

  send(event: { id?: number | string; event?: string; data: unknown }): void {
    if (this.closed || this.cutOffIfBehind()) return;
    let frame = '';
    if (event.id !== undefined) frame += `id: ${event.id}\n`;
    if (event.event) frame += `event: ${event.event}\n`;
    frame += `data: ${JSON.stringify(event.data)}\n\n`;
    this.res.write(frame);
  }

  comment(text: string): void {
    if (!this.closed && !this.cutOffIfBehind()) this.res.write(`: ${text}\n\n`);
  }

  /**
   * Backpressure: what the client has not taken yet (bytes queued on the response) must stay under the limit.
   * Checked before each write, so one large frame (a snapshot) still goes out whole to a client that reads.
   */
  private cutOffIfBehind(): boolean {
    if (this.res.writableLength <= this.registry.maxBufferBytes) return false;
    this.registry.slowConsumersCut++;
    this.cut({ reason: 'slow_consumer', reconnect: true }, true);
    return true;
  }

  /** Ends the stream with a last `end` event; the connection is destroyed if the client has not taken it soon. */
  cut(reason: { reason: string; reconnect: boolean }, force = false): void {
    const res = this.res;
    this.close(reason, force);
    setTimeout(() => res.destroy(), SLOW_CONSUMER_GRACE_MS).unref();
  }

  /** Ends the stream; with a reason, tells the client first (`event: end`, and whether to reconnect). */
  close(reason?: { reason: string; reconnect: boolean }, force = false): void {
    if (this.closed) return;
    if (reason) {
      const frame = `event: end\ndata: ${JSON.stringify(reason)}\n\n`;
      if (force) this.res.write(frame);
      else this.send({ event: 'end', data: reason });
    }
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    this.registry.delete(this);
    for (const fn of this.onClose.splice(0)) {
      try {
        fn();
      } catch {
        // a close handler must not keep the others from running
      }
    }
    this.res.end();
  }
}

@Injectable()
export class SseRegistry {
  private readonly streams = new Set<TrackedStream>();
  /** Streams cut off for not reading (counted in /metrics). */
  slowConsumersCut = 0;

  constructor(
    @InjectConfig() private readonly config: CanopyConfig,
    private readonly credentials: CredentialWatch,
  ) {}

  /** Bytes a stream may have waiting for its client before it is cut off. */
  get maxBufferBytes(): number {
    return this.config.limits.liveClientBufferBytes;
  }

  /** Tracks a stream; with the grant of its credential, it ends when that credential stops being valid. */
  add(stream: TrackedStream, grant?: Grant): void {
    this.streams.add(stream);
    if (!grant) return;
    const watched = this.credentials.watch(grant, (reason) => stream.cut({ reason, reconnect: false }));
    stream.whenClosed(() => watched.stop());
  }

  delete(stream: TrackedStream): void {
    this.streams.delete(stream);
  }

  get size(): number {
    return this.streams.size;
  }

  closeAll(reason: { reason: string; reconnect: boolean }): void {
    for (const s of [...this.streams]) s.close(reason);
  }
}
