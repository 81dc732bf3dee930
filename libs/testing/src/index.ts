// @canopy/testing: helpers for integration and end-to-end tests (real Postgres and Redis, no mocks).

export * from './test-postgres';
export * from './test-credentials';
export * from './eventually';
export * from './fake-llm-server';
export * from './cluster';
export * from './conversation-arbitraries';
export * from './provider-request-schemas';
export * from './private-redis';
export * from './private-postgres';
export * from './process-inspector';
export * from './loop-blocking';
export * from './chaos';
export * from './private-redis-cluster';
export * from './format-shapes';
export * from './mcp-test-server';
export * from './otlp-receiver';
export * from './in-memory-telemetry';
