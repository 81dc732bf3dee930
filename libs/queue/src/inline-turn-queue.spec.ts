import { describe, expect, it } from '@jest/globals';
import { InlineTurnQueue } from './inline-turn-queue';
import { describeTurnQueueContract } from './testing/turn-queue.contract';

describeTurnQueueContract(
  'inline',
  () => {
    const queue = new InlineTurnQueue();
    return Promise.resolve({ queue, cleanup: () => queue.close(1_000) });
  },
  { attempts: 1, runsInline: true },
  { describe, it, expect },
);
