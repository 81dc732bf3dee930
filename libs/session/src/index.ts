// @canopy/session: the session engine — commands on a persisted tree, live sessions with their
// projected state and subscribers, and the executor that drives runs and commits them.

export * from './session-deps';
export * from './session.service';
export type { QueuedPromptView } from './prompt-queue';
export * from './live-session';
export * from './live-session-host';
export * from './session-input';
export * from './run-executor';
export * from './run-tracker';
export * from './session-publisher';
export * from './convert';
export * from './title';
export * from './reconcile';
export * from './session.module';
export * from './quotas/quota-admission';
