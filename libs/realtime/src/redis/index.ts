// The distributed runtime's adapters of the realtime ports (ioredis): event bus, live registry, activity feed,
// credential notices.

export * from './redis-event-bus';
export * from './redis-live-registry';
export * from './redis-activity-feed';
export * from './redis-credential-notices';
export * from './redis-runtime';
