// turns() gives a consistent view at every notification, checked as a property over event sequences recorded
// from the real service (booted here): conversations with regenerations, edits and navigation, cancelled
// prompts and regenerations, failing runs, tool calls paused for a decision and resumed, a steered run. fast-check
// picks where a subscriber joins (a snapshot built the way the service builds it), which events are delivered
// twice, and checks every view the projection hands out: a finished turn never vanishes (no `idle` with the turn
// gone), a reply only grows while its run goes on, a cancelled or failed run's partial reply moves to
// `interrupted`, only the last turn ever streams and never while idle, repeated events change nothing, and
// wherever a subscriber joined it ends on the view of the tree the service holds.

import fc from 'fast-check';
import {
  LiveState,
  liveStateInit,
  type SessionEventBody,
  type SessionSnapshot,
  type Turn,
} from '@canopy/core';
import { eventually } from '@canopy/testing';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../../apps/api/test/support/test-app';
import { Canopy, TurnsProjection, type LiveTurnsView, type Session } from './index';

let t: TestApp;
let canopy: Canopy;
const recorded = new Map<string, SessionEventBody[]>();

/** Records a session's events from its creation until `scenario` is done and the stream caught up. */
async function record(
  name: string,
  create: Parameters<Canopy['sessions']['create']>[0],
  scenario: (session: Session, events: SessionEventBody[]) => Promise<void>,
): Promise<void> {
  const { session } = await canopy.sessions.create(create);
  const controller = new AbortController();
  const events: SessionEventBody[] = [];
  const reading = (async () => {
    for await (const e of session.events({ mode: 'observer', signal: controller.signal })) events.push(e);
  })().catch(() => undefined);
  await eventually(() => expect(events[0]?.type).toBe('snapshot'));
  await scenario(session, events);
  await eventually(async () => expect((await session.get()).status).toBe('idle'), { timeoutMs: 20_000 });
  // Caught up: the stream has every event up to the seq of a fresh snapshot.
  const probe = session.events({ signal: AbortSignal.timeout(10_000) });
  const { value: fresh } = await probe.next();
  await probe.return(undefined);
  const lastSeq = (fresh as SessionEventBody).seq;
  await eventually(() => expect(events.at(-1)?.seq).toBeGreaterThanOrEqual(lastSeq));
  controller.abort();
  await reading;
  recorded.set(name, events);
}

/** Waits until a few words of the reply streamed (so a cancel has a partial reply to keep). */
const someDeltas = (events: SessionEventBody[], after = 0) =>
  eventually(() =>
    expect(events.slice(after).filter((e) => e.type === 'text_delta').length).toBeGreaterThanOrEqual(3),
  );

beforeAll(async () => {
  t = await startTestApp({ env: { EVENT_COALESCE_MS: '0' } });
  const admin = new Canopy({ baseUrl: t.url, credential: TEST_ADMIN_KEY });
  canopy = new Canopy({ baseUrl: t.url, credential: (await admin.admin.createTenant('turns')).apiKey });
  const echo = (delayMs: number) => ({ model: 'mock:echo', opts: { delayMs, numbered: true } });

  await record('conversation', echo(3), async (s) => {
    await s.run('first question here');
    await s.run('second question');
    await s.regenerate(3);
    await eventually(async () => expect((await s.tree()).nodes).toHaveLength(5));
    await s.edit(2, 'second, edited');
    await eventually(async () => expect((await s.tree()).nodes).toHaveLength(7));
    await s.navigate(4);
  });
  await record('cancelled prompt', echo(60), async (s, events) => {
    await s.run('one');
    const from = events.length;
    await s.prompt('a long prompt with many words to echo back slowly');
    await someDeltas(events, from);
    await s.cancel();
  });
  await record('cancelled regeneration', echo(60), async (s, events) => {
    await s.run('please answer this question');
    const from = events.length;
    await s.regenerate(1);
    await someDeltas(events, from);
    await s.cancel();
  });
  await record(
    'failing runs',
    {
      model: 'mock:script',
      opts: {
        serverTools: ['clock'],
        script: [
          { text: 'Let me check the time.', toolCalls: [{ name: 'clock', input: {} }] },
          { error: 'model exploded' },
        ],
      },
    },
    async (s) => {
      await s.run('what time is it');
    },
  );
  await record(
    'client tool and approval',
    {
      model: 'mock:script',
      tools: [{ name: 'lookup', description: 'Looks up', inputSchema: { type: 'object' } }],
      opts: {
        serverTools: ['deploy'],
        script: [
          { text: 'Looking it up.', toolCalls: [{ name: 'lookup', input: { q: 'weather' } }] },
          { toolCalls: [{ name: 'deploy', input: { target: 'staging' } }] },
          { text: 'All done.' },
        ],
      },
    },
    async (s) => {
      await s.prompt('check then deploy');
      await eventually(async () => expect((await s.get()).status).toBe('paused'));
      await s.resume({ type: 'result', content: 'sunny' });
      await eventually(async () => expect((await s.get()).status).toBe('paused'));
      await s.resume({ type: 'execute' });
    },
  );
  await record('steered run', echo(40), async (s, events) => {
    await s.prompt('a first prompt that takes a little while');
    await someDeltas(events);
    await s.prompt('then this one', { ifBusy: 'steer' });
  });
}, 120_000);

afterAll(async () => {
  await t?.close();
});

/** A turn as a reader sees it: its prompt, its reply so far (text, thinking, tool calls) and its results. */
function shown(turn: Turn) {
  const reply = turn.content
    .map((b) =>
      b.type === 'tool_use' ? `<${b.name}>` : b.type === 'text' || b.type === 'thinking' ? b.text : '',
    )
    .join('');
  return {
    prompt: turn.userText.map((b) => b.text).join(''),
    reply,
    results: Object.keys(turn.toolResults).length,
  };
}

type Shown = ReturnType<typeof shown>;

/** `later` still shows `earlier`: the same prompt, a reply that only grew, no result lost. */
function keeps(earlier: Shown, later: Shown | undefined): boolean {
  return (
    later !== undefined &&
    later.prompt === earlier.prompt &&
    later.reply.startsWith(earlier.reply) &&
    later.results >= earlier.results
  );
}

/** The snapshot a subscriber joining after `events[k]` gets: the service's projection of what came before. */
function snapshotAt(events: SessionEventBody[], k: number): SessionEventBody {
  const first = events[0]!;
  if (first.type !== 'snapshot') throw new Error('a recording starts with its snapshot');
  const state = new LiveState(liveStateInit(first.data));
  for (const e of events.slice(1, k + 1)) state.apply(e);
  const data: SessionSnapshot = state.snapshot();
  const snapshot: SessionEventBody = { seq: data.seq, sessionId: first.sessionId, type: 'snapshot', data };
  return snapshot;
}

function extendsPath(before: number[], after: number[]): boolean {
  return before.every((id, i) => after[i] === id);
}

/** Plays a delivery through a projection, checking every view it answers; returns the last one. */
function play(delivery: SessionEventBody[]): LiveTurnsView {
  const p = new TurnsProjection();
  let previous: LiveTurnsView | null = null;
  let path: number[] = [];
  for (const event of delivery) {
    const before = p.view();
    const repeated = before !== null && event.type !== 'snapshot' && event.seq <= before.seq;
    const changed = p.apply(event);
    const view = p.view()!;
    if (repeated) {
      // A repeated (or stale) event changes nothing.
      expect(changed).toBe(false);
      expect(view).toEqual(before);
      continue;
    }
    // Only what subscribers are told counts (the steps of a commit before its tree tell nothing).
    if (!changed) continue;
    const turns = view.turns.map(shown);
    const streaming = view.turns.flatMap((turn, i) => (turn.status === 'streaming' ? [i] : []));
    expect(streaming.length).toBeLessThanOrEqual(1);
    if (streaming.length) expect(streaming[0]).toBe(view.turns.length - 1);
    if (view.session.status === 'idle') expect(streaming).toEqual([]);

    let exempt = event.type === 'snapshot';
    if (event.type === 'snapshot') path = event.data.tree.path;
    // A finished turn is told as saved: never idle with a turn that has no id yet.
    if (view.session.status === 'idle') expect(view.turns.every((x) => x.id !== null)).toBe(true);
    if (event.type === 'tree') {
      // Navigation, an edit or a regeneration moving the path elsewhere, a rollback: a new view, not a glitch.
      exempt = !extendsPath(path, event.data.path);
      path = event.data.path;
    }
    if (previous && !exempt) {
      const before = previous.turns.map(shown);
      if ((event.type === 'cancelled' || event.type === 'error') && event.data.runId !== null) {
        // What the run had shown moves to `interrupted`; the rest stays.
        const kept = [...turns, ...(view.interrupted?.turns.map(shown) ?? [])];
        for (const turn of before) {
          const problem = kept.some((k) => keeps(turn, k)) ? null : { lost: turn, after: event.type };
          expect(problem).toBeNull();
        }
        if (view.interrupted) {
          expect(view.interrupted.status).toBe(event.type === 'cancelled' ? 'cancelled' : 'error');
        }
      } else {
        expect(turns.length).toBeGreaterThanOrEqual(before.length);
        before.forEach((turn, i) => {
          const problem = keeps(turn, turns[i]) ? null : { event: event.type, was: turn, now: turns[i] };
          expect(problem).toBeNull();
        });
      }
    }
    previous = view;
  }
  return previous!;
}

describe('turns() over recorded event sequences', () => {
  it('recorded every scenario, each with the events it is about', () => {
    const types = (name: string) => new Set(recorded.get(name)!.map((e) => e.type));
    expect([...recorded.keys()]).toHaveLength(6);
    expect(types('cancelled prompt').has('cancelled')).toBe(true);
    expect(types('cancelled regeneration').has('cancelled')).toBe(true);
    expect(types('failing runs').has('error')).toBe(true);
    expect(types('client tool and approval').has('pause')).toBe(true);
    expect(types('client tool and approval').has('tool_progress')).toBe(true);
    expect(types('conversation').has('tree')).toBe(true);
  });

  it('keeps every notification consistent, wherever a subscriber joins and whatever arrives twice', () => {
    const names = [...recorded.keys()];
    fc.assert(
      fc.property(
        fc.constantFrom(...names),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.array(
          fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })),
          {
            maxLength: 8,
          },
        ),
        (name, joinAt, repeats) => {
          const events = recorded.get(name)!;
          const k = Math.floor(joinAt * (events.length - 1));
          const delivery: SessionEventBody[] = [snapshotAt(events, k), ...events.slice(k + 1)];
          // Redeliver some events later than they came (a reconnect that replays them): positions and sources.
          for (const [where, which] of repeats) {
            const at = 1 + Math.floor(where * (delivery.length - 1));
            // An event already delivered before position `at` (which = 1 would index `at` itself).
            const source = delivery[Math.min(at - 1, Math.floor(which * at))]!;
            if (source.type !== 'snapshot') delivery.splice(at, 0, source);
          }
          const end = play(delivery);
          // Wherever it joined, it ends on the service's own view of the final tree.
          const fresh = new TurnsProjection();
          fresh.apply(snapshotAt(events, events.length - 1));
          expect(end.turns).toEqual(fresh.view()!.turns);
          expect(end.session.status).toBe('idle');
        },
      ),
      { numRuns: 100 },
    );
  });

  it('shows the finished turn at every step of a commit (status idle, turn, tree) from the start', () => {
    for (const [name, events] of recorded) {
      const end = play(events);
      expect({ name, streaming: end.turns.some((x) => x.status === 'streaming') }).toEqual({
        name,
        streaming: false,
      });
    }
  });

  it('keeps a cancelled run’s prompt and partial reply, and a failed run’s, as interrupted', () => {
    const prompt = play(recorded.get('cancelled prompt')!);
    expect(prompt.interrupted).toMatchObject({
      status: 'cancelled',
      turns: [{ id: null, error: 'cancelled' }],
    });
    const cancelled = shown(prompt.interrupted!.turns[0]!);
    expect(cancelled.prompt).toBe('a long prompt with many words to echo back slowly');
    expect(cancelled.reply).toMatch(/^Echo #1: a/);
    expect(prompt.turns.map(shown).map((x) => x.prompt)).toEqual(['one']);

    const regen = play(recorded.get('cancelled regeneration')!);
    // The regenerated reply continued turn 1: shown with its prompt, beside the reply the rollback restored.
    expect(regen.interrupted!.turns.map((x) => [x.id, shown(x).prompt])).toEqual([
      [1, 'please answer this question'],
    ]);
    expect(shown(regen.interrupted!.turns[0]!).reply).toMatch(/^Echo #2/);
    expect(shown(regen.turns[0]!).reply).toBe('Echo #1: please answer this question');

    const failed = play(recorded.get('failing runs')!);
    expect(failed.interrupted).toMatchObject({
      status: 'error',
      error: { message: expect.stringContaining('model exploded') },
    });
    expect(shown(failed.interrupted!.turns[0]!).reply).toContain('Let me check the time.');
  });
});
