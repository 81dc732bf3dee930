// The api deployable: wiring only. Capabilities live in libs and are imported here.

import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { AllExceptionsFilter, ConfigModule, LoggingModule, type CanopyConfig } from '@canopy/common';
import { SessionModule } from '@canopy/session';
import { DatabaseModule } from '@canopy/store';
import { HealthController } from './health/health.controller';

@Module({})
export class ApiModule {
  static forRoot(config: CanopyConfig): DynamicModule {
    return {
      module: ApiModule,
      imports: [ConfigModule.forRoot(config), LoggingModule, DatabaseModule, SessionModule],
      controllers: [HealthController],
      providers: [{ provide: APP_FILTER, useClass: AllExceptionsFilter }],
    };
  }
}
