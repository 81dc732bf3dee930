import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { RedisRunControl } from './run-control';
import { describeRunControlContract } from './testing/run-control.contract';

const REDIS_URL = 'redis://127.0.0.1:6379';

describeRunControlContract(
  'Redis (three processes)',
  async () => {
    const prefix = `rctest${randomBytes(4).toString('hex')}`;
    const connections: Redis[] = [];
    const controls = ['api-1', 'api-2', 'worker-1'].map((instanceId) => {
      const redis = new Redis(REDIS_URL);
      const subscriber = new Redis(REDIS_URL);
      connections.push(redis, subscriber);
      return new RedisRunControl({ redis, subscriber, prefix, instanceId });
    });
    // Every process is listening before the test speaks.
    const probe = connections[0]!;
    for (let i = 0; i < 200; i++) {
      const [, listeners] = (await probe.pubsub('NUMSUB', `${prefix}:run-control`)) as [string, number];
      if (Number(listeners) === controls.length) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    return {
      controls,
      async cleanup() {
        await Promise.all(controls.map((c) => c.close()));
        await Promise.all(connections.map((c) => c.quit()));
      },
    };
  },
  { describe, it, expect },
);
