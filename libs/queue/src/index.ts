// @canopy/queue: the TurnQueue port, its inline (embedded) and BullMQ (distributed) adapters, and the job catalog.

export * from './turn-queue.port';
export * from './inline-turn-queue';
export * from './bullmq-turn-queue';
export * from './job-catalog';
export * from './run-control';
