// @canopy/queue: the TurnQueue and Timers ports, their in-process (embedded) and BullMQ (distributed) adapters,
// the job catalog, and run control (cancel and close across processes).

export * from './turn-queue.port';
export * from './inline-turn-queue';
export * from './bullmq-turn-queue';
export * from './job-catalog';
export * from './run-control';
export * from './timers.port';
export * from './timer-jobs';
export * from './in-process-timers';
export * from './bullmq-timers';
export * from './queue.module';
