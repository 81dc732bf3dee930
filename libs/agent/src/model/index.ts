// The model port and its adapters: the router over the built-in mocks and the AI SDK providers.

export * from './model-gateway.port';
export * from './model.gateway';
export * from './ai-sdk.gateway';
export * from './mock.gateway';
export * from './message-mapping';
export * from './model-id';
export { toModelError, retryAfterMs } from './provider-errors';
export * from './model-catalog';
export * from './model-limits';
export * from './tenant-credentials.gateway';
