import type { SessionEvent, SessionEventInput } from '@canopy/core';

import { describeEventBusContract } from '../testing';
import { InProcessEventBus } from './in-process-event-bus';

const REPLAY_LIMIT = 10;

const delta = (text: string): SessionEventInput => ({
  type: 'text_delta',
  data: { runId: 'run-1', index: 0, delta: text },
});

/** A wall clock the test moves by hand. */
function manualClock(start = Date.now()) {
  let ms = start;
  return { now: () => ms, advance: (by: number) => (ms += by) };
}

describeEventBusContract(
  'in-process',
  () => {
    // A restart of the process loses everything but the clock, which has moved on by the time a new bus exists.
    const clock = manualClock();
    const make = () =>
      new InProcessEventBus({ replayLimit: REPLAY_LIMIT, now: clock.now, onListenerError: () => {} });
    let bus = make();
    return Promise.resolve({
      bus,
      restart: async () => {
        await bus.close();
        clock.advance(1);
        bus = make();
        return bus;
      },
      cleanup: () => bus.close(),
    });
  },
  { replayLimit: REPLAY_LIMIT },
);

describe('InProcessEventBus', () => {
  it('starts a session at the wall clock in microseconds, then counts by one', async () => {
    const clock = manualClock(1_750_000_000_123);
    const bus = new InProcessEventBus({ replayLimit: 5, now: clock.now });

    const first = await bus.publish('t', 's', [delta('a'), delta('b')]);
    clock.advance(10_000); // the sequence counts on; the clock only sets where it starts
    const second = await bus.publish('t', 's', [delta('c')]);

    expect([...first, ...second].map((e) => e.seq)).toEqual([
      1_750_000_000_123_000, 1_750_000_000_123_001, 1_750_000_000_123_002,
    ]);
    expect(first.map((e) => e.at)).toEqual([1_750_000_000_123, 1_750_000_000_123]);
    expect(second[0]!.at).toBe(1_750_000_010_123);
  });

  it('starts each session of a bus at the clock of its own first publish', async () => {
    const clock = manualClock(2_000);
    const bus = new InProcessEventBus({ replayLimit: 5, now: clock.now });
    const [a] = await bus.publish('t', 'a', [delta('a')]);
    clock.advance(3);
    const [b] = await bus.publish('t', 'b', [delta('b')]);
    expect([a!.seq, b!.seq]).toEqual([2_000_000, 2_003_000]);
  });

  it('keeps seqs positive integers whatever the clock says', async () => {
    const atZero = new InProcessEventBus({ replayLimit: 5, now: () => 0 });
    expect((await atZero.publish('t', 's', [delta('a')]))[0]!.seq).toBe(1);
    const fractional = new InProcessEventBus({ replayLimit: 5, now: () => 12.3456789 });
    expect((await fractional.publish('t', 's', [delta('a')]))[0]!.seq).toBe(12_345);
  });

  it('sees a restart as a gap: a replay from before it is incomplete', async () => {
    const clock = manualClock();
    const old = new InProcessEventBus({ replayLimit: 5, now: clock.now });
    const before = await old.publish('t', 's', [delta('a')]);
    await old.close();
    clock.advance(250);

    const bus = new InProcessEventBus({ replayLimit: 5, now: clock.now });
    const after = await bus.publish('t', 's', [delta('b')]);
    const replay = await bus.replay('t', 's', before[0]!.seq);
    expect(replay).toEqual({ events: after, complete: false, lastSeq: after[0]!.seq });
  });

  it('answers a replay after forget as incomplete while the counter remains', async () => {
    const bus = new InProcessEventBus({ replayLimit: 5 });
    const published = await bus.publish('t', 's', [delta('a'), delta('b')]);
    await bus.forget('t', 's');
    expect(await bus.replay('t', 's', published[0]!.seq)).toEqual({
      events: [],
      complete: false,
      lastSeq: published[1]!.seq,
    });
    expect(await bus.lastSeq('t', 's')).toBe(published[1]!.seq);
  });

  it('keeps subscriptions across forget', async () => {
    const bus = new InProcessEventBus({ replayLimit: 5 });
    const seen: SessionEvent[] = [];
    await bus.subscribe('t', 's', (e) => seen.push(e));
    await bus.forget('t', 's');
    const published = await bus.publish('t', 's', [delta('a')]);
    expect(seen).toEqual(published);
  });

  it('delivers synchronously, before publish returns', async () => {
    const bus = new InProcessEventBus({ replayLimit: 5 });
    const seen: number[] = [];
    await bus.subscribe('t', 's', (e) => seen.push(e.seq));
    const pending = bus.publish('t', 's', [delta('a'), delta('b')]);
    expect(seen).toHaveLength(2);
    expect(seen).toEqual((await pending).map((e) => e.seq));
  });

  it('reports a throwing listener to onListenerError and goes on', async () => {
    const errors: unknown[] = [];
    const bus = new InProcessEventBus({ replayLimit: 5, onListenerError: (error) => errors.push(error) });
    const failure = new Error('boom');
    const seen: SessionEvent[] = [];
    await bus.subscribe('t', 's', () => {
      throw failure;
    });
    await bus.subscribe('t', 's', (e) => seen.push(e));

    const published = await bus.publish('t', 's', [delta('a'), delta('b')]);
    expect(errors).toEqual([failure, failure]);
    expect(seen).toEqual(published);
  });

  it('delivers events a listener publishes after the batch being delivered, to every subscriber in seq order', async () => {
    const bus = new InProcessEventBus({ replayLimit: 10 });
    const first: number[] = [];
    const second: number[] = [];
    const nested: Promise<SessionEvent[]>[] = [];
    await bus.subscribe('t', 's', (e) => {
      first.push(e.seq);
      if (e.type === 'text_delta' && e.data.delta === 'a') {
        nested.push(bus.publish('t', 's', [delta('reaction')]));
      }
    });
    await bus.subscribe('t', 's', (e) => second.push(e.seq));

    const published = await bus.publish('t', 's', [delta('a'), delta('b')]);
    const reaction = (await Promise.all(nested)).flat();
    const expected = [...published, ...reaction].map((e) => e.seq);
    expect(reaction).toHaveLength(1);
    expect(first).toEqual(expected);
    expect(second).toEqual(expected);
    expect(expected).toEqual([...expected].sort((x, y) => x - y));
  });

  it('does not deliver to a subscriber that another listener removed mid-delivery', async () => {
    const bus = new InProcessEventBus({ replayLimit: 5 });
    const seen: string[] = [];
    const handles: { second?: () => Promise<void> } = {};
    await bus.subscribe('t', 's', () => {
      seen.push('first');
      void handles.second?.();
    });
    handles.second = await bus.subscribe('t', 's', () => seen.push('second'));

    await bus.publish('t', 's', [delta('a')]);
    expect(seen).toEqual(['first']);
  });

  it('counts one function subscribed twice as two subscriptions', async () => {
    const bus = new InProcessEventBus({ replayLimit: 5 });
    const seen: number[] = [];
    const listener = (e: SessionEvent) => seen.push(e.seq);
    const unsubscribeOne = await bus.subscribe('t', 's', listener);
    await bus.subscribe('t', 's', listener);
    await unsubscribeOne();

    const [event] = await bus.publish('t', 's', [delta('a')]);
    expect(seen).toEqual([event!.seq]);
  });

  it('does not let a delimiter inside ids merge two streams', async () => {
    const bus = new InProcessEventBus({ replayLimit: 5 });
    await bus.publish('a:b', 'c', [delta('x')]);
    expect(await bus.lastSeq('a', 'b:c')).toBe(0);
  });

  describe('memory bounds', () => {
    it('keeps at most retainedEventsLimit events in all logs, dropping those of the least recently active first', async () => {
      const bus = new InProcessEventBus({ replayLimit: 5, retainedEventsLimit: 8 });
      const a = await bus.publish('t', 'a', [delta('1'), delta('2'), delta('3'), delta('4')]);
      const b = await bus.publish('t', 'b', [delta('1'), delta('2'), delta('3')]);
      expect(bus.retainedEvents).toBe(7);
      // a published earlier than b: a's two oldest events make room for c's three.
      const c = await bus.publish('t', 'c', [delta('1'), delta('2'), delta('3')]);
      expect(bus.retainedEvents).toBe(8);
      expect(await bus.replay('t', 'a', a[1]!.seq)).toEqual({
        events: a.slice(2),
        complete: true,
        lastSeq: a[3]!.seq,
      });
      expect(await bus.replay('t', 'a', 0)).toEqual({
        events: a.slice(2),
        complete: false,
        lastSeq: a[3]!.seq,
      });
      expect((await bus.replay('t', 'b', 0)).events).toEqual(b);
      expect((await bus.replay('t', 'c', 0)).events).toEqual(c);
      // A publish to a (its own log capped at 5, a2 only) makes b the least recently active: b's log goes whole.
      const a2 = await bus.publish('t', 'a', [delta('5'), delta('6'), delta('7'), delta('8'), delta('9')]);
      expect(bus.retainedEvents).toBe(8);
      expect(await bus.replay('t', 'b', b[0]!.seq)).toEqual({
        events: [],
        complete: false,
        lastSeq: b[2]!.seq,
      });
      expect((await bus.replay('t', 'c', 0)).events).toEqual(c);
      expect((await bus.replay('t', 'a', 0)).events).toEqual(a2);
      // Numbering is untouched: the next publish to b follows its last seq.
      const b2 = await bus.publish('t', 'b', [delta('4')]);
      expect(b2[0]!.seq).toBe(b[2]!.seq + 1);
    });

    it('counts events that the per-session limit and forget drop', async () => {
      const bus = new InProcessEventBus({ replayLimit: 3, retainedEventsLimit: 100 });
      await bus.publish('t', 'a', [delta('1'), delta('2'), delta('3'), delta('4')]);
      await bus.publish('t', 'a', [delta('5')]);
      expect(bus.retainedEvents).toBe(3);
      await bus.publish('t', 'b', [delta('1')]);
      await bus.forget('t', 'a');
      expect(bus.retainedEvents).toBe(1);
    });

    it('forgets a session nobody listens to replayTtlMs after its last publish, sequence included', async () => {
      const clock = manualClock();
      const bus = new InProcessEventBus({ replayLimit: 5, replayTtlMs: 60_000, now: clock.now });
      const quiet = await bus.publish('t', 'quiet', [delta('a')]);
      const watched = await bus.publish('t', 'watched', [delta('a')]);
      const seen: SessionEvent[] = [];
      const unsubscribe = await bus.subscribe('t', 'watched', (e) => seen.push(e));
      clock.advance(30_000);
      const recent = await bus.publish('t', 'recent', [delta('a')]);
      clock.advance(30_000);
      expect(bus.sweepExpired()).toBe(1);
      expect(bus.retainedEvents).toBe(2);
      // As an expired Redis stream: nothing to replay, and a new publish starts a fresh sequence above the old one.
      expect(await bus.replay('t', 'quiet', quiet[0]!.seq)).toEqual({
        events: [],
        complete: true,
        lastSeq: 0,
      });
      expect(await bus.lastSeq('t', 'quiet')).toBe(0);
      clock.advance(1);
      const again = await bus.publish('t', 'quiet', [delta('b')]);
      expect(again[0]!.seq).toBeGreaterThan(quiet[0]!.seq);
      // The listened-to session stays (and keeps delivering) until its listener leaves.
      expect(await bus.lastSeq('t', 'watched')).toBe(watched[0]!.seq);
      await unsubscribe();
      expect(bus.sweepExpired()).toBe(1);
      expect(await bus.lastSeq('t', 'watched')).toBe(0);
      expect((await bus.replay('t', 'recent', 0)).events).toEqual(recent);
      await bus.close();
    });

    it('rejects a total limit below the per-session one and a TTL that is not positive', () => {
      expect(() => new InProcessEventBus({ replayLimit: 10, retainedEventsLimit: 9 })).toThrow(RangeError);
      expect(() => new InProcessEventBus({ replayLimit: 10, replayTtlMs: 0 })).toThrow(RangeError);
    });
  });

  it('rejects a replay limit below one', () => {
    expect(() => new InProcessEventBus({ replayLimit: 0 })).toThrow(RangeError);
    expect(() => new InProcessEventBus({ replayLimit: 2.5 })).toThrow(RangeError);
  });

  it('refuses work once closed', async () => {
    const bus = new InProcessEventBus({ replayLimit: 5 });
    const seen: SessionEvent[] = [];
    await bus.subscribe('t', 's', (e) => seen.push(e));
    await bus.close();
    await expect(bus.publish('t', 's', [delta('a')])).rejects.toThrow('closed');
    await expect(bus.subscribe('t', 's', () => {})).rejects.toThrow('closed');
    expect(seen).toEqual([]);
  });
});
