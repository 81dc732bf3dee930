// Graceful shutdown of the api's edge: stop taking commands (503 unavailable), let the engine stop its runs (the
// grace period is RunDuties.stopExecuting's: runs in flight get up to SHUTDOWN_GRACE_MS to end, the rest are
// cancelled, committing nothing), then close SSE streams and WebSocket clients with a reconnect hint. The manager
// then closes the live sessions, before the HTTP server and the database close.

import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { CanopyException } from '@canopy/common';
import { RunDuties } from '@canopy/session';
import { SseRegistry } from '../http/sse';
import { LiveGateway } from '../http/live.gateway';

@Injectable()
export class ShutdownService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Shutdown');
  private draining = false;

  constructor(
    private readonly duties: RunDuties,
    private readonly streams: SseRegistry,
    private readonly gateway: LiveGateway,
  ) {}

  get isDraining(): boolean {
    return this.draining;
  }

  /** Express middleware: while draining, anything but a read answers 503 so clients retry elsewhere. */
  readonly middleware = (req: Request, _res: Response, next: NextFunction): void => {
    if (this.draining && req.method !== 'GET' && req.method !== 'HEAD') {
      next(new CanopyException('unavailable', 'the server is shutting down; retry'));
      return;
    }
    next();
  };

  async beforeApplicationShutdown(signal?: string): Promise<void> {
    this.draining = true;
    this.logger.log(`shutting down${signal ? ` (${signal})` : ''}`);
    await this.duties.stopExecuting();
    this.streams.closeAll({ reason: 'shutdown', reconnect: true });
    this.gateway.closeAll();
  }
}
