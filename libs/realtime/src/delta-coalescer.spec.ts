import type { SessionEventInput } from '@canopy/core';
import fc from 'fast-check';

import { DeltaCoalescer } from './delta-coalescer';

const text = (delta: string, index = 0, runId = 'run-1'): SessionEventInput => ({
  type: 'text_delta',
  data: { runId, index, delta },
});
const thinking = (delta: string, index = 0, runId = 'run-1'): SessionEventInput => ({
  type: 'thinking_delta',
  data: { runId, index, delta },
});
const toolInput = (delta: string, index = 1, runId = 'run-1'): SessionEventInput => ({
  type: 'tool_use_delta',
  data: { runId, index, id: `tool-${index}`, delta },
});
const textEnd = (index = 0, runId = 'run-1'): SessionEventInput => ({
  type: 'text_end',
  data: { runId, index },
});
const textStart = (index = 0, runId = 'run-1'): SessionEventInput => ({
  type: 'text_start',
  data: { runId, index },
});

/** A coalescer whose flush records every batch it gets. */
function recording(options: { windowMs: number; maxChars?: number; now?: () => number }) {
  const batches: SessionEventInput[][] = [];
  const coalescer = new DeltaCoalescer({ ...options, flush: (events) => void batches.push(events) });
  return { coalescer, batches };
}

describe('DeltaCoalescer', () => {
  describe('with a time window', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('sends a delta at once when none went out within the window, and merges those that follow until it ends', async () => {
      const { coalescer, batches } = recording({ windowMs: 50 });
      coalescer.push(text('Hel'));
      await jest.advanceTimersByTimeAsync(0);
      expect(batches).toEqual([[text('Hel')]]); // the leading edge: no wait
      coalescer.push(text('lo, '));
      coalescer.push(text('world'));

      await jest.advanceTimersByTimeAsync(49);
      expect(batches).toEqual([[text('Hel')]]);
      await jest.advanceTimersByTimeAsync(1);
      expect(batches).toEqual([[text('Hel')], [text('lo, world')]]);
    });

    it('measures the window from the last delta that went out', async () => {
      const { coalescer, batches } = recording({ windowMs: 50 });
      coalescer.push(text('a'));
      await jest.advanceTimersByTimeAsync(30);
      coalescer.push(text('b')); // 30 ms after 'a' went out: waits until 50
      await jest.advanceTimersByTimeAsync(19);
      expect(batches).toEqual([[text('a')]]);
      await jest.advanceTimersByTimeAsync(1);
      expect(batches).toEqual([[text('a')], [text('b')]]);

      await jest.advanceTimersByTimeAsync(10);
      coalescer.push(text('c')); // 10 ms after 'b' went out: waits until 100
      await jest.advanceTimersByTimeAsync(39);
      expect(batches).toEqual([[text('a')], [text('b')]]);
      await jest.advanceTimersByTimeAsync(1);
      expect(batches).toEqual([[text('a')], [text('b')], [text('c')]]);

      await jest.advanceTimersByTimeAsync(50);
      coalescer.push(text('d')); // a window after 'c': at once again
      await jest.advanceTimersByTimeAsync(0);
      expect(batches).toEqual([[text('a')], [text('b')], [text('c')], [text('d')]]);
    });

    it('publishes a steady fast stream about once per window', async () => {
      const { coalescer, batches } = recording({ windowMs: 50 });
      for (let ms = 0; ms < 500; ms += 5) {
        coalescer.push(text('x'));
        await jest.advanceTimersByTimeAsync(5);
      }
      await coalescer.flush();
      expect(
        batches
          .flat()
          .map((e) => ('delta' in e.data ? e.data.delta : ''))
          .join(''),
      ).toBe('x'.repeat(100));
      expect(batches.length).toBeGreaterThanOrEqual(10);
      expect(batches.length).toBeLessThanOrEqual(11);
    });

    it('starts a new event for a delta arriving after the window even if the timer is late', async () => {
      let now = 0;
      const { coalescer, batches } = recording({ windowMs: 50, now: () => now });
      coalescer.push(text('a'));
      now = 10;
      coalescer.push(text('b')); // due at 50
      now = 80; // the event loop was busy: the window is over but its timer has not run yet
      coalescer.push(text('c'));
      await coalescer.flush();
      expect(batches).toEqual([[text('a')], [text('b')], [text('c')]]);
    });

    it('flushes the buffered delta together with the next event of another kind, in order', async () => {
      const { coalescer, batches } = recording({ windowMs: 50 });
      coalescer.push(textStart());
      coalescer.push(text('a'));
      coalescer.push(text('b'));
      coalescer.push(text('c'));
      coalescer.push(textEnd());
      await jest.advanceTimersByTimeAsync(0);

      expect(batches).toEqual([[textStart()], [text('a')], [text('bc'), textEnd()]]);
      await jest.advanceTimersByTimeAsync(100);
      expect(batches).toHaveLength(3); // the buffer's timer was cancelled with the flush
    });

    it('never merges across blocks, kinds or runs, and keeps their order', async () => {
      const { coalescer, batches } = recording({ windowMs: 50 });
      const input = [
        thinking('I '),
        thinking('think'),
        thinking('!'),
        text('An'),
        text('swer'),
        text('other block', 1),
        toolInput('{"q":'),
        toolInput('1}'),
        toolInput('{}', 2),
        text('next run', 0, 'run-2'),
        text('!', 0, 'run-2'),
      ];
      for (const event of input) coalescer.push(event);
      await jest.advanceTimersByTimeAsync(50);

      expect(batches.flat()).toEqual([
        thinking('I '), // at once
        thinking('think!'),
        text('Answer'),
        text('other block', 1),
        toolInput('{"q":1}'),
        toolInput('{}', 2),
        text('next run!', 0, 'run-2'),
      ]);
    });

    it('splits a burst at maxChars and sends a delta reaching maxChars at once', async () => {
      const { coalescer, batches } = recording({ windowMs: 50, maxChars: 5 });
      coalescer.push(text('>')); // opens the window
      coalescer.push(text('abc'));
      coalescer.push(text('de')); // reaches 5: goes out without waiting for the window
      await jest.advanceTimersByTimeAsync(0);
      expect(batches).toEqual([[text('>')], [text('abcde')]]);

      coalescer.push(text('fg'));
      coalescer.push(text('hijk')); // would make 6: 'fg' goes, 'hijk' waits
      await jest.advanceTimersByTimeAsync(0);
      expect(batches).toEqual([[text('>')], [text('abcde')], [text('fg')]]);

      coalescer.push(text('0123456789')); // longer than maxChars on its own: sent whole, never cut
      await jest.advanceTimersByTimeAsync(0);
      expect(batches).toEqual([
        [text('>')],
        [text('abcde')],
        [text('fg')],
        [text('hijk')],
        [text('0123456789')],
      ]);
      await jest.advanceTimersByTimeAsync(100);
      expect(batches).toHaveLength(5);
    });

    it('uses 2048 characters as the default maxChars', async () => {
      const { coalescer, batches } = recording({ windowMs: 50 });
      coalescer.push(text('>'));
      coalescer.push(text('x'.repeat(2047)));
      coalescer.push(text('y'));
      await jest.advanceTimersByTimeAsync(0);
      expect(batches).toEqual([[text('>')], [text(`${'x'.repeat(2047)}y`)]]);
    });

    it('leaves the events it was given untouched', async () => {
      const { coalescer } = recording({ windowMs: 50 });
      const first = text('a');
      const second = text('b');
      coalescer.push(first);
      coalescer.push(second);
      coalescer.push(text('c'));
      await coalescer.flush();
      expect(first).toEqual(text('a'));
      expect(second).toEqual(text('b'));
    });

    it('publishes the buffer on flush() and on close(), and refuses pushes after close', async () => {
      const { coalescer, batches } = recording({ windowMs: 1_000 });
      coalescer.push(text('a'));
      coalescer.push(text('a'));
      await coalescer.flush();
      expect(batches).toEqual([[text('a')], [text('a')]]);

      coalescer.push(text('b'));
      coalescer.push(text('c'));
      await coalescer.close();
      expect(batches).toEqual([[text('a')], [text('a')], [text('bc')]]);
      expect(() => coalescer.push(text('d'))).toThrow('closed');
      await jest.advanceTimersByTimeAsync(2_000);
      expect(batches).toHaveLength(3);
    });
  });

  it('keeps every delta and the order of everything else (any event sequence)', async () => {
    const kinds = fc.constantFrom('text', 'thinking', 'tool', 'end');
    const step = fc.record({
      kind: kinds,
      index: fc.integer({ min: 0, max: 2 }),
      delta: fc.string({ maxLength: 6 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 40 }),
        fc.integer({ min: 1, max: 12 }),
        async (steps, maxChars) => {
          const input = steps.map(({ kind, index, delta }) =>
            kind === 'text'
              ? text(delta, index)
              : kind === 'thinking'
                ? thinking(delta, index)
                : kind === 'tool'
                  ? toolInput(delta, index)
                  : textEnd(index),
          );
          const { coalescer, batches } = recording({ windowMs: 60_000, maxChars });
          for (const event of input) coalescer.push(event);
          await coalescer.close();

          const output = batches.flat();
          // Gluing adjacent deltas of the same block gives the same stream on both sides.
          expect(glue(output)).toEqual(glue(input));
          expect(output.length).toBeLessThanOrEqual(input.length);
          for (const event of output) {
            if ('delta' in event.data && event.data.delta.length > maxChars) {
              expect(input).toContainEqual(event); // only an input delta already longer than maxChars
            }
          }
        },
      ),
    );
  });

  it('sends every push at once, in order, when windowMs is 0', async () => {
    const { coalescer, batches } = recording({ windowMs: 0 });
    const input = [text('a'), text('b'), textEnd(), text('c')];
    for (const event of input) coalescer.push(event);
    await coalescer.flush();
    expect(batches).toEqual(input.map((event) => [event]));
  });

  it('hands batches to an async flush one at a time, in order', async () => {
    const started: string[] = [];
    const releases: (() => void)[] = [];
    let running = 0;
    let maxRunning = 0;
    const coalescer = new DeltaCoalescer({
      windowMs: 0,
      flush: async (events) => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        started.push(events.map((e) => ('delta' in e.data ? e.data.delta : e.type)).join());
        await new Promise<void>((resolve) => releases.push(resolve));
        running -= 1;
      },
    });
    coalescer.push(text('a'));
    coalescer.push(text('b'));
    coalescer.push(textEnd());
    const done = coalescer.flush();

    await waitUntil(() => started.length === 1);
    await Promise.resolve();
    expect(started).toEqual(['a']); // 'b' waits for 'a' to finish
    releases.shift()!();
    await waitUntil(() => started.length === 2);
    expect(started).toEqual(['a', 'b']);
    releases.shift()!();
    await waitUntil(() => started.length === 3);
    releases.shift()!();
    await done;
    expect(started).toEqual(['a', 'b', 'text_end']);
    expect(maxRunning).toBe(1);
  });

  it('goes on after a failing batch and reports the failure on the next flush()', async () => {
    const delivered: SessionEventInput[][] = [];
    const failure = new Error('publish failed');
    const coalescer = new DeltaCoalescer({
      windowMs: 0,
      flush: (events) => {
        if (events.some((e) => e.type === 'text_end')) throw failure;
        delivered.push(events);
      },
    });
    coalescer.push(text('a'));
    coalescer.push(textEnd());
    coalescer.push(text('b'));

    await expect(coalescer.flush()).rejects.toBe(failure);
    expect(delivered).toEqual([[text('a')], [text('b')]]);
    await expect(coalescer.flush()).resolves.toBeUndefined(); // reported once
  });

  it('hands a failing batch to onError when one is given', async () => {
    const reported: [unknown, SessionEventInput[]][] = [];
    const failure = new Error('publish failed');
    const coalescer = new DeltaCoalescer({
      windowMs: 0,
      flush: () => Promise.reject(failure),
      onError: (error, events) => reported.push([error, events]),
    });
    coalescer.push(textEnd());
    await expect(coalescer.close()).resolves.toBeUndefined();
    expect(reported).toEqual([[failure, [textEnd()]]]);
  });

  it('does not keep the process alive while a delta waits for its window', async () => {
    const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timeouts();
    const { coalescer, batches } = recording({ windowMs: 60_000 });
    coalescer.push(text('a'));
    coalescer.push(text('b')); // waits for the window
    expect(timeouts()).toBe(before);
    await coalescer.close();
    expect(batches).toEqual([[text('a')], [text('b')]]);
  });

  it('rejects a negative window or a maxChars below one', () => {
    expect(() => new DeltaCoalescer({ windowMs: -1, flush: () => {} })).toThrow(RangeError);
    expect(() => new DeltaCoalescer({ windowMs: 10, maxChars: 0, flush: () => {} })).toThrow(RangeError);
  });
});

/** Merges adjacent deltas of the same type, run and block: the stream a client reconstructs. */
function glue(events: SessionEventInput[]): SessionEventInput[] {
  const out: SessionEventInput[] = [];
  for (const event of events) {
    const last = out[out.length - 1];
    if (
      last &&
      'delta' in last.data &&
      'delta' in event.data &&
      last.type === event.type &&
      last.data.runId === event.data.runId &&
      last.data.index === event.data.index
    ) {
      out[out.length - 1] = {
        ...last,
        data: { ...last.data, delta: last.data.delta + event.data.delta },
      } as SessionEventInput;
    } else {
      out.push(event);
    }
  }
  return out;
}

/** Lets pending promise callbacks run until the condition holds (a deadline guards against a hang). */
async function waitUntil(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met before the deadline');
    await new Promise((resolve) => setImmediate(resolve));
  }
}
