// Flushes and stops OpenTelemetry when the application shuts down, so the spans of its last runs are exported.

import { Global, Module, type OnApplicationShutdown } from '@nestjs/common';
import { shutdownTelemetry } from './telemetry';

@Global()
@Module({})
export class TelemetryModule implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    await shutdownTelemetry();
  }
}
