import { describe, expect, it } from '@jest/globals';
import { InProcessTimers } from './in-process-timers';
import { InProcessRunControl } from './run-control';
import { describeRunControlContract } from './testing/run-control.contract';
import { describeTimersContract } from './testing/timers.contract';

describeTimersContract(
  'in-process',
  () => {
    const timers = new InProcessTimers();
    return Promise.resolve({ timers, cleanup: () => timers.close() });
  },
  { describe, it, expect },
);

describeRunControlContract(
  'in-process',
  () => Promise.resolve({ controls: [new InProcessRunControl()], cleanup: () => Promise.resolve() }),
  { describe, it, expect },
);
