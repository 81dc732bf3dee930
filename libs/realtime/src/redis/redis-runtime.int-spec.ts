// The Redis connections and the realtime adapters on them across a Redis restart (kill -9, started again empty) under load: every command in
// flight or queued settles (done or failed), none hangs, and the connections work again afterwards. Before the
// command timeout, commands in flight at the kill were dropped by ioredis unsettled (autoResendUnfulfilledCommands
// off) and the auto-pipeline then held every later command behind them.

import { createRedisConnections, type RedisConnections } from '@canopy/redis';
import { PrivateRedis, eventually } from '@canopy/testing';
import { createRedisRealtime, type RedisRealtime } from './redis-runtime';

let server: PrivateRedis;
let connections: RedisConnections;
let runtime: RedisRealtime;

beforeAll(async () => {
  server = await PrivateRedis.start();
  connections = createRedisConnections({ url: server.url, commandTimeoutMs: 1_000, onError: () => {} });
  runtime = createRedisRealtime(connections, {
    prefix: 'restart-test',
    replayLimit: 100,
    replayTtlSeconds: 600,
    onError: () => {},
  });
  await connections.ping();
}, 30_000);

afterAll(async () => {
  await runtime?.close();
  await connections?.close();
  await server?.down();
}, 30_000);

/** Settles to 'done' or 'failed'; never rejects. */
const outcome = (p: Promise<unknown>): Promise<'done' | 'failed'> =>
  p.then(
    () => 'done' as const,
    () => 'failed' as const,
  );

describe('the runtime connections across a Redis restart', () => {
  it('settle every command issued around a kill -9 and work again once Redis is back', async () => {
    const settled: Array<Promise<'done' | 'failed'>> = [];
    let stop = false;
    // Steady load: publishes (Lua, auto-pipelined) and plain commands on the shared commands connection.
    const load = (async () => {
      let i = 0;
      while (!stop) {
        for (let k = 0; k < 20; k++) {
          settled.push(
            outcome(
              runtime.bus.publish('t1', `s${k}`, [{ type: 'status', data: { status: 'busy', i } } as never]),
            ),
          );
          settled.push(outcome(runtime.redis.incr(`restart-test:n:${k}`)));
        }
        i++;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();

    await new Promise((r) => setTimeout(r, 300));
    await server.restart(500);
    await new Promise((r) => setTimeout(r, 300));
    stop = true;
    await load;

    // Every command settles: the slowest waits one command timeout after the restart.
    const results = await Promise.race([
      Promise.all(settled),
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), 10_000)),
    ]);
    expect(results).not.toBe('hung');
    expect((results as string[]).length).toBeGreaterThan(0);

    // And later commands work again on the same connections.
    await eventually(async () => expect(await runtime.redis.incr('restart-test:after')).toBeGreaterThan(0), {
      timeoutMs: 10_000,
    });
    await eventually(
      async () => {
        const events = await runtime.bus.publish('t1', 'after', [
          { type: 'status', data: { status: 'idle' } } as never,
        ]);
        expect(events).toHaveLength(1);
      },
      { timeoutMs: 10_000 },
    );
  }, 60_000);

  it('rejects commands quickly while Redis is paused (SIGSTOP) and recovers after', async () => {
    server.pause();
    try {
      const result = await Promise.race([
        outcome(runtime.redis.get('restart-test:any')),
        new Promise<'hung'>((r) => setTimeout(() => r('hung'), 5_000)),
      ]);
      expect(result).toBe('failed');
    } finally {
      server.resume();
    }
    await eventually(async () => expect(await runtime.redis.ping()).toBe('PONG'), { timeoutMs: 10_000 });
  }, 30_000);
});
