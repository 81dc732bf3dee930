// The worker deployable: wiring only. Job processors arrive with the distributed runtime (libs/queue).

import { DynamicModule, Module } from '@nestjs/common';
import { ConfigModule, LoggingModule, type CanopyConfig } from '@canopy/common';
import { DatabaseModule } from '@canopy/store';
import { WorkerHeartbeat } from './worker-heartbeat.service';

@Module({})
export class WorkerModule {
  static forRoot(config: CanopyConfig): DynamicModule {
    return {
      module: WorkerModule,
      imports: [ConfigModule.forRoot(config), LoggingModule, DatabaseModule],
      providers: [WorkerHeartbeat],
    };
  }
}
