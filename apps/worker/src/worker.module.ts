// The worker deployable: wiring only. It executes runs taken from the BullMQ queue (the session engine in its
// 'worker' role), publishing their events through Redis.

import { DynamicModule, Module } from '@nestjs/common';
import { ConfigModule, LoggingModule, type CanopyConfig } from '@canopy/common';
import { SessionModule } from '@canopy/session';
import { DatabaseModule } from '@canopy/store';
import { WorkerHeartbeat } from './worker-heartbeat.service';

@Module({})
export class WorkerModule {
  static forRoot(config: CanopyConfig): DynamicModule {
    return {
      module: WorkerModule,
      imports: [ConfigModule.forRoot(config), LoggingModule, DatabaseModule, SessionModule.forRoot('worker')],
      providers: [WorkerHeartbeat],
    };
  }
}
