// @canopy/core: the pure, isomorphic conversation core shared by the service and its clients. No Node APIs, no
// I/O: messages and usage, the branching tree, the UI turn projection and its streaming reducers, run results.

export * from './usage';
export * from './message';
export * from './tree';
export * from './turn';
export * from './turn-result';
export * from './scope';
export * from './events';
export * from './live-state';
export * from './api/schemas';
export * from './api/responses';
export * from './api/error-codes';
export * from './api/views';
export * from './formats';
export * from './api/catalog-schemas';
export * from './api/saas-schemas';
export * from './api/mcp-schemas';
export * from './api/settings-schemas';
export * from './api/files-schemas';
export * from './api/sharing-schemas';
