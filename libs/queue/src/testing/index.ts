export * from './turn-queue.contract';
export * from './timers.contract';
export * from './run-control.contract';
