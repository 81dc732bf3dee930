// The EventBus contract as a jest suite: every adapter (in-process, Redis) runs it unchanged through a factory
// that builds a fresh bus per test. It speaks only the port, waits for asynchronous delivery with deadlines, and
// proves an absence (nothing delivered) by waiting for a later event that must arrive first.

import type { SessionEvent, SessionEventInput } from '@canopy/core';

import type { EventBus, Unsubscribe } from '../ports';
import { jestApi } from './jest-api';
import { uniqueId, waitFor } from './wait';

export interface EventBusFixture {
  bus: EventBus;
  /**
   * Starts a new bus instance over the same durable state, as a restart of the process would, and returns it
   * (the old instance may be closed). Optional: without it, pass `skipRestart` and that rule goes untested.
   */
  restart?: () => Promise<EventBus>;
  /** Closes whatever the fixture opened (including a bus started by restart). */
  cleanup(): Promise<void>;
}

export interface EventBusContractOptions {
  /** The replay limit the factory's buses are configured with (small, e.g. 10, keeps the suite fast). */
  replayLimit: number;
  skipRestart?: boolean;
}

/** Text deltas numbered from `from`, so every event of a test is distinguishable. */
function deltas(count: number, from = 0, runId = 'run-1'): SessionEventInput[] {
  return Array.from({ length: count }, (_, i) => ({
    type: 'text_delta',
    data: { runId, index: 0, delta: `d${from + i}` },
  }));
}

/** What a subscriber or a replay shows of an event, minus the timestamp. */
function shape(event: SessionEvent): Pick<SessionEvent, 'seq' | 'sessionId' | 'type' | 'data'> {
  return { seq: event.seq, sessionId: event.sessionId, type: event.type, data: event.data };
}

export function describeEventBusContract(
  name: string,
  make: () => Promise<EventBusFixture>,
  options: EventBusContractOptions,
): void {
  const { describe, it, expect, beforeEach, afterEach } = jestApi();
  const { replayLimit } = options;

  describe(`EventBus contract: ${name}`, () => {
    let fixture: EventBusFixture;
    let bus: EventBus;
    let tenant: string;
    let session: string;
    const unsubscribes: Unsubscribe[] = [];

    /** Subscribes and records what arrives. */
    async function record(tenantId = tenant, sessionId = session, into: SessionEvent[] = []) {
      const unsubscribe = await bus.subscribe(tenantId, sessionId, (event) => into.push(event));
      unsubscribes.push(unsubscribe);
      return { events: into, unsubscribe };
    }

    beforeEach(async () => {
      fixture = await make();
      bus = fixture.bus;
      tenant = uniqueId('tenant');
      session = uniqueId('session');
    });

    afterEach(async () => {
      for (const unsubscribe of unsubscribes.splice(0)) await unsubscribe();
      await fixture.cleanup();
    });

    describe('numbering', () => {
      it('numbers a batch with consecutive seqs, keeping each event as given, and returns it', async () => {
        const input: SessionEventInput[] = [
          { type: 'status', data: { status: 'busy', runId: 'run-1' } },
          { type: 'text_start', data: { runId: 'run-1', index: 0 } },
          { type: 'text_delta', data: { runId: 'run-1', index: 0, delta: 'Hello' } },
        ];
        const published = await bus.publish(tenant, session, input);

        expect(published.map(({ type, data }) => ({ type, data }))).toEqual(input);
        const first = published[0]!.seq;
        expect(Number.isSafeInteger(first) && first > 0).toBe(true);
        expect(published.map((e) => e.seq)).toEqual([first, first + 1, first + 2]);
        for (const event of published) {
          expect(event.sessionId).toBe(session);
          expect(Number.isFinite(event.at)).toBe(true);
        }
        expect(await bus.lastSeq(tenant, session)).toBe(first + 2);
      });

      it('continues the sequence with the next batch, strictly increasing by one', async () => {
        const a = await bus.publish(tenant, session, deltas(2));
        const b = await bus.publish(tenant, session, deltas(3, 2));
        const c = await bus.publish(tenant, session, deltas(1, 5));

        const seqs = [...a, ...b, ...c].map((e) => e.seq);
        const first = seqs[0]!;
        expect(seqs).toEqual([0, 1, 2, 3, 4, 5].map((i) => first + i));
        expect(await bus.lastSeq(tenant, session)).toBe(first + 5);
      });

      it('assigns nothing for an empty batch', async () => {
        const [only] = await bus.publish(tenant, session, deltas(1));
        expect(await bus.publish(tenant, session, [])).toEqual([]);
        expect(await bus.lastSeq(tenant, session)).toBe(only!.seq);
        const [next] = await bus.publish(tenant, session, deltas(1, 1));
        expect(next!.seq).toBe(only!.seq + 1);
      });

      it('reports lastSeq 0 and an empty, complete replay for a session that never published', async () => {
        expect(await bus.lastSeq(tenant, session)).toBe(0);
        expect(await bus.replay(tenant, session, 0)).toEqual({ events: [], complete: true, lastSeq: 0 });
      });

      it('never interleaves the batches of many concurrent publishers', async () => {
        const publishers = 20;
        const size = 5;
        const delivered = (await record()).events;

        const results = await Promise.all(
          Array.from({ length: publishers }, (_, p) => bus.publish(tenant, session, deltas(size, p * size))),
        );

        for (const batch of results) {
          const first = batch[0]!.seq;
          expect(batch.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4].map((i) => first + i));
        }
        const all = results.flat().sort((a, b) => a.seq - b.seq);
        const first = all[0]!.seq;
        expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => first + i));
        expect(await bus.lastSeq(tenant, session)).toBe(first + publishers * size - 1);

        await waitFor('every event to be delivered', () => delivered.length >= publishers * size);
        expect(delivered.map(shape)).toEqual(all.map(shape));
        // Each batch arrived as one contiguous run: its data (d<p*size>..) in order, unbroken by another batch.
        for (const batch of results) {
          const at = delivered.findIndex((e) => e.seq === batch[0]!.seq);
          expect(delivered.slice(at, at + size).map(shape)).toEqual(batch.map(shape));
        }
        const replay = await bus.replay(tenant, session, 0);
        expect(replay.events.map(shape)).toEqual(all.slice(-replayLimit).map(shape));
      });
    });

    describe('delivery', () => {
      it('delivers only events published after subscribe resolved, in order, exactly once', async () => {
        await bus.publish(tenant, session, deltas(3));
        const { events } = await record();

        const later = [
          ...(await bus.publish(tenant, session, deltas(2, 3))),
          ...(await bus.publish(tenant, session, deltas(1, 5))),
        ];
        await waitFor('the later events', () => events.length >= 3);
        const marker = await bus.publish(tenant, session, deltas(1, 6));
        await waitFor('the marker event', () => events.some((e) => e.seq === marker[0]!.seq));

        expect(events.map(shape)).toEqual([...later, ...marker].map(shape));
      });

      it('delivers every event to every subscriber', async () => {
        const a = await record();
        const b = await record();
        const published = await bus.publish(tenant, session, deltas(4));

        await waitFor('both subscribers', () => a.events.length >= 4 && b.events.length >= 4);
        expect(a.events.map(shape)).toEqual(published.map(shape));
        expect(b.events.map(shape)).toEqual(published.map(shape));
      });

      it('stops delivering to a subscriber once its unsubscribe resolved', async () => {
        const leaving = await record();
        const staying = await record();
        const first = await bus.publish(tenant, session, deltas(1));
        await waitFor('the first event', () => leaving.events.length >= 1 && staying.events.length >= 1);

        await leaving.unsubscribe();
        const after = await bus.publish(tenant, session, deltas(2, 1));
        await waitFor('the remaining subscriber', () => staying.events.length >= 3);

        expect(leaving.events.map(shape)).toEqual(first.map(shape));
        expect(staying.events.map(shape)).toEqual([...first, ...after].map(shape));
      });

      it('keeps delivering to the others and the publisher when a listener throws', async () => {
        unsubscribes.push(
          await bus.subscribe(tenant, session, () => {
            throw new Error('listener failure (expected by the test)');
          }),
        );
        const healthy = await record();

        const first = await bus.publish(tenant, session, deltas(2));
        const second = await bus.publish(tenant, session, deltas(1, 2));

        await waitFor('the healthy subscriber', () => healthy.events.length >= 3);
        expect(healthy.events.map(shape)).toEqual([...first, ...second].map(shape));
        expect(await bus.lastSeq(tenant, session)).toBe(second[0]!.seq);
      });
    });

    describe('replay', () => {
      it('anchors a sequence that has none: the first events replay completely after the anchor', async () => {
        expect(await bus.lastSeq(tenant, session)).toBe(0);
        const anchored = await bus.anchor(tenant, session);
        expect(anchored).toBeGreaterThan(0);
        expect(await bus.anchor(tenant, session)).toBe(anchored); // idempotent
        expect(await bus.lastSeq(tenant, session)).toBe(anchored);
        expect(await bus.replay(tenant, session, anchored)).toEqual({
          events: [],
          complete: true,
          lastSeq: anchored,
        });
        const published = await bus.publish(tenant, session, deltas(3));
        expect(published[0]!.seq).toBe(anchored + 1);
        const replay = await bus.replay(tenant, session, anchored);
        expect(replay.complete).toBe(true);
        expect(replay.events.map(shape)).toEqual(published.map(shape));
        // A sequence that exists is answered as it is.
        expect(await bus.anchor(tenant, session)).toBe(published[2]!.seq);
      });

      it('gives exactly the events after `after`, once, in order', async () => {
        const published = await bus.publish(tenant, session, deltas(5));
        const lastSeq = published[4]!.seq;

        const replay = await bus.replay(tenant, session, published[1]!.seq);
        expect(replay.complete).toBe(true);
        expect(replay.lastSeq).toBe(lastSeq);
        expect(replay.events.map(shape)).toEqual(published.slice(2).map(shape));
      });

      it('answers an empty, complete replay when nothing was missed', async () => {
        const published = await bus.publish(tenant, session, deltas(3));
        const lastSeq = published[2]!.seq;

        expect(await bus.replay(tenant, session, lastSeq)).toEqual({ events: [], complete: true, lastSeq });
        expect(await bus.replay(tenant, session, lastSeq + 10)).toEqual({
          events: [],
          complete: true,
          lastSeq,
        });
      });

      it('agrees with what a subscriber received: replay after a seen seq fills the gap exactly', async () => {
        const seen = await bus.publish(tenant, session, deltas(2));
        const live = await record();
        const missed = await bus.publish(tenant, session, deltas(3, 2));
        await waitFor('the live events', () => live.events.length >= 3);

        const replay = await bus.replay(tenant, session, seen[1]!.seq);
        expect(replay.events.map(shape)).toEqual(live.events.map(shape));
        expect(replay.events.map(shape)).toEqual(missed.map(shape));
        expect(replay.complete).toBe(true);
      });

      it(`keeps the last ${replayLimit} events and flags a replay reaching past them as incomplete`, async () => {
        const published = [
          ...(await bus.publish(tenant, session, deltas(replayLimit))),
          ...(await bus.publish(tenant, session, deltas(3, replayLimit))),
        ];
        const retained = published.slice(-replayLimit);
        const firstRetained = retained[0]!.seq;
        const lastSeq = published[published.length - 1]!.seq;

        const atBoundary = await bus.replay(tenant, session, firstRetained - 1);
        expect(atBoundary.complete).toBe(true);
        expect(atBoundary.lastSeq).toBe(lastSeq);
        expect(atBoundary.events.map(shape)).toEqual(retained.map(shape));

        const pastBoundary = await bus.replay(tenant, session, firstRetained - 2);
        expect(pastBoundary.complete).toBe(false);
        expect(pastBoundary.lastSeq).toBe(lastSeq);
        expect(pastBoundary.events.map(shape)).toEqual(retained.map(shape));

        const fromStart = await bus.replay(tenant, session, 0);
        expect(fromStart.complete).toBe(false);
        expect(fromStart.events.map(shape)).toEqual(retained.map(shape));

        const inside = await bus.replay(tenant, session, lastSeq - 2);
        expect(inside.complete).toBe(true);
        expect(inside.events.map(shape)).toEqual(published.slice(-2).map(shape));
      });

      it('keeps only the tail of a single batch longer than the log', async () => {
        const published = await bus.publish(tenant, session, deltas(replayLimit + 2));
        expect(published).toHaveLength(replayLimit + 2);

        const replay = await bus.replay(tenant, session, 0);
        expect(replay.events.map(shape)).toEqual(published.slice(-replayLimit).map(shape));
        expect(replay.complete).toBe(false);
      });
    });

    describe('isolation and lifetime', () => {
      it('keeps tenants apart: the same session id in two tenants is two streams', async () => {
        const other = uniqueId('tenant');
        const mine = await record(tenant, session);
        const theirs = await record(other, session);

        const a = await bus.publish(tenant, session, deltas(3));
        const b = await bus.publish(other, session, deltas(1, 100));
        await waitFor('both streams', () => mine.events.length >= 3 && theirs.events.length >= 1);
        const aMarker = await bus.publish(tenant, session, deltas(1, 3));
        await waitFor('the marker', () => mine.events.length >= 4);

        expect(mine.events.map(shape)).toEqual([...a, ...aMarker].map(shape));
        expect(theirs.events.map(shape)).toEqual(b.map(shape));
        expect(await bus.lastSeq(tenant, session)).toBe(aMarker[0]!.seq);
        expect(await bus.lastSeq(other, session)).toBe(b[0]!.seq);
        expect((await bus.replay(other, session, 0)).events.map(shape)).toEqual(b.map(shape));
      });

      it('keeps sessions of one tenant apart', async () => {
        const second = uniqueId('session');
        const a = await bus.publish(tenant, session, deltas(2));
        const b = await bus.publish(tenant, second, deltas(1, 50));

        expect((await bus.replay(tenant, session, 0)).events.map(shape)).toEqual(a.map(shape));
        expect((await bus.replay(tenant, second, 0)).events.map(shape)).toEqual(b.map(shape));
        expect(b[0]!.sessionId).toBe(second);
      });

      it('forgets the log of a session but never reuses its seqs', async () => {
        const before = await bus.publish(tenant, session, deltas(3));
        const oldLast = before[2]!.seq;

        await bus.forget(tenant, session);
        expect((await bus.replay(tenant, session, before[0]!.seq - 1)).events).toEqual([]);

        const after = await bus.publish(tenant, session, deltas(2, 3));
        expect(after[0]!.seq).toBeGreaterThan(oldLast);
        expect(after[1]!.seq).toBe(after[0]!.seq + 1);
        expect(await bus.lastSeq(tenant, session)).toBe(after[1]!.seq);
        expect((await bus.replay(tenant, session, oldLast)).events.map(shape)).toEqual(after.map(shape));
      });

      const restartIt = options.skipRestart ? it.skip : it;
      restartIt('starts a restarted bus above every seq the previous instance assigned', async () => {
        if (!fixture.restart)
          throw new Error('the fixture has no restart(): provide one or pass skipRestart');
        const before = await bus.publish(tenant, session, deltas(3));
        const oldLast = before[2]!.seq;

        bus = await fixture.restart();
        const after = await bus.publish(tenant, session, deltas(2, 3));
        expect(after[0]!.seq).toBeGreaterThan(oldLast);
        expect(after[1]!.seq).toBe(after[0]!.seq + 1);
        expect(await bus.lastSeq(tenant, session)).toBe(after[1]!.seq);

        const replay = await bus.replay(tenant, session, oldLast);
        expect(replay.events.map(shape)).toEqual(after.map(shape));
      });
    });
  });
}
