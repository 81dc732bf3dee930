// Contract test suites for the realtime ports: every adapter runs them unchanged (inside jest only).

export * from './event-bus.contract';
export * from './live-registry.contract';
export * from './activity-feed.contract';
export * from './credential-notices.contract';
export { waitFor } from './wait';
