// A frontend protocol's stream as the SSE registry tracks every stream of the API: it lives no longer than the
// credential that opened it (revoked, expired, its tenant disabled: it ends with the protocol's error) and a
// shutdown ends it. On shutdown the AI SDK's stream is dropped, which its chat takes for a network loss it can
// resume from (on another instance); AG-UI's ends with RUN_ERROR (code `shutdown`).

import type { Request, Response } from 'express';
import type { AuthedRequest } from '@canopy/auth';
import type { SseRegistry, TrackedStream } from '../http/sse';

export class ProtocolStream implements TrackedStream {
  private closed = false;
  private readonly onClose: Array<() => void> = [];

  constructor(
    req: Request,
    private readonly res: Response,
    private readonly registry: SseRegistry,
    /** Ends the protocol's stream with a last word saying why (then the response ends). */
    private readonly endWith: (reason: string) => void,
    /** On shutdown, drop the connection (a client that resumes after a network loss) rather than say why. */
    private readonly dropOnShutdown: boolean,
  ) {
    res.once('close', () => this.finished());
    registry.add(this, (req as AuthedRequest).grant);
  }

  cut(reason: { reason: string; reconnect: boolean }): void {
    if (this.closed) return;
    this.endWith(reason.reason);
  }

  close(reason?: { reason: string; reconnect: boolean }): void {
    if (this.closed) return;
    if (reason?.reconnect && this.dropOnShutdown) this.res.destroy();
    else this.endWith(reason?.reason ?? 'closed');
  }

  whenClosed(fn: () => void): void {
    if (this.closed) fn();
    else this.onClose.push(fn);
  }

  private finished(): void {
    if (this.closed) return;
    this.closed = true;
    this.registry.delete(this);
    for (const fn of this.onClose.splice(0)) fn();
  }
}
