// The lanes' order, without a database: who gets a released permit, bounded bursts, timeouts.

import { ConnectionLanes, REQUEST_BURST } from './connection-lanes';

const timeout = () => new Error('timeout exceeded when trying to connect');

/** Acquires in `lane` and records the label once granted. */
function waiter(lanes: ConnectionLanes, lane: 'request' | 'run', label: string, log: string[], ms = 10_000) {
  return lanes.acquire(lane, ms).then(() => log.push(label));
}

const flush = () => new Promise((r) => setImmediate(r));

describe('ConnectionLanes', () => {
  it('grants at once while permits are free, then queues', async () => {
    const lanes = new ConnectionLanes(2, timeout);
    const log: string[] = [];
    void waiter(lanes, 'run', 'a', log);
    void waiter(lanes, 'run', 'b', log);
    void waiter(lanes, 'run', 'c', log);
    await flush();
    expect(log).toEqual(['a', 'b']);
    expect(lanes.state).toEqual({ inUse: 2, request: 0, run: 1 });
    lanes.release();
    await flush();
    expect(log).toEqual(['a', 'b', 'c']);
    expect(lanes.state.inUse).toBe(2);
    lanes.release();
    lanes.release();
    expect(lanes.state.inUse).toBe(0);
  });

  it('serves waiting requests before waiting runs, each lane in its order', async () => {
    const lanes = new ConnectionLanes(1, timeout);
    const log: string[] = [];
    await lanes.acquire('run', 1000);
    void waiter(lanes, 'run', 'run-1', log);
    void waiter(lanes, 'run', 'run-2', log);
    void waiter(lanes, 'request', 'req-1', log);
    void waiter(lanes, 'request', 'req-2', log);
    for (let i = 0; i < 4; i++) {
      lanes.release();
      await flush();
    }
    expect(log).toEqual(['req-1', 'req-2', 'run-1', 'run-2']);
  });

  it(`lets runs through after ${REQUEST_BURST} requests in a row while they wait: no lane starves`, async () => {
    const lanes = new ConnectionLanes(1, timeout);
    const log: string[] = [];
    await lanes.acquire('run', 1000);
    void waiter(lanes, 'run', 'run-1', log);
    void waiter(lanes, 'run', 'run-2', log);
    for (let i = 1; i <= 2 * REQUEST_BURST + 2; i++) void waiter(lanes, 'request', `req-${i}`, log);
    for (let i = 0; i < 2 * REQUEST_BURST + 4; i++) {
      lanes.release();
      await flush();
    }
    expect(log.indexOf('run-1')).toBe(REQUEST_BURST);
    expect(log.indexOf('run-2')).toBe(2 * REQUEST_BURST + 1);
    expect(log).toHaveLength(2 * REQUEST_BURST + 4);
  });

  it('fails a wait past its deadline and drops it from its lane', async () => {
    jest.useFakeTimers();
    try {
      const lanes = new ConnectionLanes(1, timeout);
      await lanes.acquire('request', 1000);
      const late = lanes.acquire('run', 100);
      jest.advanceTimersByTime(101);
      await expect(late).rejects.toThrow('timeout exceeded');
      expect(lanes.state).toEqual({ inUse: 1, request: 0, run: 0 });
      lanes.release();
      expect(lanes.state.inUse).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  it('needs a permit', () => {
    expect(() => new ConnectionLanes(0, timeout)).toThrow('at least one permit');
  });
});
