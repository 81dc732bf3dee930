// Until the job processors arrive (libs/queue), the worker's standing duty: keep checking that its database
// answers, say so in the logs when it stops answering, and (when configured) touch a heartbeat file that a
// container health check can read.

import { writeFile } from 'node:fs/promises';
import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { InjectConfig, type CanopyConfig } from '@canopy/common';
import { Database } from '@canopy/store';

const INTERVAL_MS = 30_000;

@Injectable()
export class WorkerHeartbeat implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(WorkerHeartbeat.name);
  private timer: NodeJS.Timeout | undefined;
  private healthy = true;

  constructor(
    private readonly database: Database,
    @InjectConfig() private readonly config: CanopyConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.beat();
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
      if (this.config.worker.heartbeatFile)
        await writeFile(this.config.worker.heartbeatFile, String(Date.now()));
    } catch (err) {
      if (this.healthy) this.logger.warn({ err }, 'database unreachable');
      this.healthy = false;
    }
  }
}
