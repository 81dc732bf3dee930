import type { ActivityEvent } from '@canopy/core';

import { describeActivityFeedContract } from '../testing';
import { InProcessActivityFeed } from './in-process-activity-feed';

describeActivityFeedContract('in-process', () => {
  const feed = new InProcessActivityFeed({ onListenerError: () => {} });
  return Promise.resolve({ feed, cleanup: () => feed.close() });
});

const status = (tenantId: string, id: string): ActivityEvent => ({
  tenantId,
  type: 'status',
  data: { id, status: 'busy' },
  at: 0,
});

describe('InProcessActivityFeed', () => {
  it('delivers synchronously, before publish returns', async () => {
    const feed = new InProcessActivityFeed();
    const seen: ActivityEvent[] = [];
    await feed.subscribe('t1', (e) => seen.push(e));
    const pending = feed.publish(status('t1', 's1'));
    expect(seen).toEqual([status('t1', 's1')]);
    await pending;
  });

  it('reports a throwing listener to onListenerError', async () => {
    const errors: unknown[] = [];
    const feed = new InProcessActivityFeed({ onListenerError: (error) => errors.push(error) });
    const failure = new Error('boom');
    await feed.subscribe(null, () => {
      throw failure;
    });
    await feed.publish(status('t1', 's1'));
    expect(errors).toEqual([failure]);
  });

  it('delivers what a listener publishes after the current event, to every subscriber in order', async () => {
    const feed = new InProcessActivityFeed();
    const first: string[] = [];
    const second: string[] = [];
    await feed.subscribe(null, (e) => {
      first.push(e.data.id);
      if (e.data.id === 'cause') void feed.publish(status('t1', 'effect'));
    });
    await feed.subscribe(null, (e) => second.push(e.data.id));

    await feed.publish(status('t1', 'cause'));
    await feed.publish(status('t1', 'later'));
    expect(first).toEqual(['cause', 'effect', 'later']);
    expect(second).toEqual(['cause', 'effect', 'later']);
  });

  it('refuses work once closed', async () => {
    const feed = new InProcessActivityFeed();
    const seen: ActivityEvent[] = [];
    await feed.subscribe(null, (e) => seen.push(e));
    await feed.close();
    await expect(feed.publish(status('t1', 's1'))).rejects.toThrow('closed');
    await expect(feed.subscribe(null, () => {})).rejects.toThrow('closed');
    expect(seen).toEqual([]);
  });
});
