// @canopy/common: what every deployable shares: validated configuration, the error model and its HTTP filter,
// structured logging, the guard on outbound connections to tenant-given URLs, OpenTelemetry.

export * from './acting-context';
export * from './config/config.schema';
export * from './config/config.module';
export * from './errors/error-code';
export * from './errors/canopy.exception';
export * from './http/all-exceptions.filter';
export * from './logging/logging.module';
export * from './net';
export * from './process';
export * from './source-mapped-stacks';
export * from './telemetry';
