export * from './turn-queue.contract';
