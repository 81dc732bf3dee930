// The first thing an entry point does: parse the environment once (the config schema) and, when OTEL_* says so,
// start OpenTelemetry, before the application's modules are loaded: the instrumentations of http, express, pg and
// ioredis patch those modules as they are required, and a module required earlier goes untraced. This file imports
// nothing that loads them.

import { ConfigError, loadConfig, type CanopyConfig } from '../config/config.schema';
import { startTelemetry } from './telemetry';

export interface BootOptions {
  /** Default for CANOPY_INSTANCE_ID. */
  defaultInstanceId: string;
  /** How the process names itself in a failure to start ("canopy", "canopy worker"). */
  label: string;
  /** OTEL_SERVICE_NAME's default for this deployable. */
  serviceName: string;
}

/** The validated configuration; an invalid one is reported (each variable named) and the process exits 1. */
export function bootConfig(env: Record<string, string | undefined>, options: BootOptions): CanopyConfig {
  let config: CanopyConfig;
  try {
    config = loadConfig(env, { defaultInstanceId: options.defaultInstanceId });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${options.label}: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  startTelemetry(config.telemetry, options.serviceName);
  return config;
}
