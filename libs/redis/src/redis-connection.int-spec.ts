// A subscriber connection against the machine's Redis: a SUBSCRIBE sent in the moment between the connection's TCP
// connect and its readiness (what a process starting under load does) subscribes, and messages arrive. With
// ioredis's ready check on, that SUBSCRIBE puts the connection in subscriber mode before the check's INFO, the
// check fails and the connection closes ("Connection in subscriber mode, only subscriber commands may be used").

import Redis from 'ioredis';
import { randomUUID } from 'node:crypto';
import { eventually } from '@canopy/testing/eventually';
import { subscriberConnection } from './redis-connection';

/** The machine's Redis. */
const TEST_REDIS_URL = 'redis://127.0.0.1:6379';

describe('subscriberConnection', () => {
  it('subscribes when SUBSCRIBE is sent before the connection is ready, and receives', async () => {
    const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true });
    const subscriber = subscriberConnection(redis, { lazyConnect: true });
    const channel = `canopy-test:${randomUUID()}`;
    const received: string[] = [];
    subscriber.on('message', (_channel: string, message: string) => received.push(message));
    try {
      // 'connect' fires once TCP is up, before the ready check: the SUBSCRIBE goes out then, as it can in a start.
      const subscribed = new Promise<unknown>((resolve, reject) => {
        subscriber.once('connect', () => {
          subscriber.subscribe(channel).then(resolve, reject);
        });
      });
      await subscriber.connect();
      await subscribed;
      await eventually(
        async () => {
          await redis.publish(channel, 'hello');
          expect(received).toContain('hello');
        },
        { timeoutMs: 5_000, intervalMs: 50 },
      );
    } finally {
      subscriber.disconnect();
      redis.disconnect();
    }
  });
});
