// Makes the validated CanopyConfig injectable everywhere (global module).

import { DynamicModule, Global, Inject, Module } from '@nestjs/common';
import type { CanopyConfig } from './config.schema';

export const CANOPY_CONFIG = Symbol('CANOPY_CONFIG');

/** Injects the CanopyConfig. */
export const InjectConfig = (): ParameterDecorator => Inject(CANOPY_CONFIG);

@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: CanopyConfig): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: CANOPY_CONFIG, useValue: config }],
      exports: [CANOPY_CONFIG],
    };
  }
}
