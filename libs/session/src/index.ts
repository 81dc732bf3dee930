// @canopy/session: the session engine — commands on a persisted tree, live sessions with their
// projected state and subscribers, the executor that drives runs and commits them, and a process's duties for the
// runs it executes.

export * from './session-deps';
export * from './session.service';
export * from './run-duties';
export * from './session-layer';
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
