// The worker deployable: wiring only. It executes runs taken from the BullMQ queue (the manager layer in its
// 'worker' role, which needs REDIS_URL), publishing their events through Redis.

import { DynamicModule, Module } from '@nestjs/common';
import { ConfigModule, LoggingModule, TelemetryModule, type CanopyConfig } from '@canopy/common';
import { ManagerModule } from '@canopy/manager';
import { StoreModule } from '@canopy/store';
import { WorkerHeartbeat } from './worker-heartbeat.service';

@Module({})
export class WorkerModule {
  static forRoot(config: CanopyConfig): DynamicModule {
    return {
      module: WorkerModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule,
        TelemetryModule,
        StoreModule.forRoot(),
        ManagerModule.forRoot('worker'),
      ],
      providers: [WorkerHeartbeat],
    };
  }
}
