// Until the job processors arrive (libs/queue), the worker's standing duty: keep checking that its database
// answers, and say so in the logs when it stops answering.

import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { Database } from '@canopy/store';

const INTERVAL_MS = 30_000;

@Injectable()
export class WorkerHeartbeat implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(WorkerHeartbeat.name);
  private timer: NodeJS.Timeout | undefined;
  private healthy = true;

  constructor(private readonly database: Database) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.beat(), INTERVAL_MS);
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  private async beat(): Promise<void> {
    try {
      await this.database.ping();
      if (!this.healthy) this.logger.log('database reachable again');
      this.healthy = true;
    } catch (err) {
      if (this.healthy) this.logger.warn({ err }, 'database unreachable');
      this.healthy = false;
    }
  }
}
