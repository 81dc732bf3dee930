// Graceful shutdown: stop taking commands (503 unavailable), give runs in flight up to SHUTDOWN_GRACE_MS to reach
// their end (the rest are cancelled by the engine, committing nothing), then close SSE streams and WebSocket
// clients with a reconnect hint, before the HTTP server and the database close.

import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { CanopyException, InjectConfig, type CanopyConfig } from '@canopy/common';
import { SessionService } from '@canopy/session';
import { SseRegistry } from '../http/sse';
import { LiveGateway } from '../http/live.gateway';

@Injectable()
export class ShutdownService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Shutdown');
  private draining = false;

  constructor(
    private readonly sessions: SessionService,
    private readonly streams: SseRegistry,
    private readonly gateway: LiveGateway,
    @InjectConfig() private readonly config: CanopyConfig,
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
    const runs = this.sessions.executor.activeRuns;
    this.logger.log(`shutting down${signal ? ` (${signal})` : ''}: ${runs} run(s) in flight`);
    const deadline = Date.now() + this.config.shutdownGraceMs;
    while (this.sessions.executor.activeRuns > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    if (this.sessions.executor.activeRuns > 0) {
      this.logger.warn(
        `${this.sessions.executor.activeRuns} run(s) still in flight after the grace period: cancelling`,
      );
    }
    await this.sessions.executor.abortAll('shutdown');
    this.streams.closeAll({ reason: 'shutdown', reconnect: true });
    this.gateway.closeAll();
  }
}
