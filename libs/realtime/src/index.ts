// @canopy/realtime: the transport ports under the session and manager layers (event bus, live registry,
// activity feed) and the api's credential notices, the embedded runtime's in-process adapters, the distributed
// runtime's Redis adapters, the delta coalescer. The contract suites every adapter must pass are test code: they
// live in the `@canopy/realtime/testing` entry (libs/realtime/src/testing), not in this barrel, as @canopy/queue's
// do.

export * from './ports';
export * from './in-process/in-process-event-bus';
export * from './in-process/in-process-live-registry';
export * from './in-process/in-process-activity-feed';
export * from './in-process/in-process-credential-notices';
export type { ListenerErrorHandler } from './in-process/listener-errors';
export * from './redis';
export * from './delta-coalescer';
export * from './realtime.module';
