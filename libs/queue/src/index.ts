// @canopy/queue: the TurnQueue port and its inline (embedded) adapter; the BullMQ adapter joins it with the
// distributed runtime.

export * from './turn-queue.port';
export * from './inline-turn-queue';
