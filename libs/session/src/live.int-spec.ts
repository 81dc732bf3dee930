// Subscriptions to a live session: snapshots taken atomically with the stream, resume with `after` (exactly the
// missed events), a mid-run joiner's in-flight view, one projected tree for every subscriber.

import { allTurns, newTurn, Tree, type Scope } from '@canopy/core';
import { EngineHarness, EventLog, converse as conversed, type Engine } from '@canopy/testing/engine-harness';

const h = new EngineHarness({ idleShutdownMs: 150 });
let engine: Engine;
let scope: Scope;

beforeAll(async () => {
  engine = await h.setup();
  scope = await h.newTenant();
});
afterAll(() => h.teardown());

const converse = (id: string, content: string) => conversed(engine, scope, id, content);

describe('subscriptions', () => {
  it('start with a snapshot whose seq is the state it reflects, then every later event once, in order', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    await converse(s.id, 'before subscribing');
    const log = await EventLog.of(engine, scope, s.id);
    const snapshot = log.events[0]!;
    expect(snapshot.type).toBe('snapshot');
    if (snapshot.type !== 'snapshot') throw new Error('unreachable');
    expect(snapshot.data.tree.path).toEqual([1, 2]);
    expect(snapshot.seq).toBe(snapshot.data.seq);
    await converse(s.id, 'after subscribing');
    const later = log.events.slice(1);
    expect(later.length).toBeGreaterThan(5);
    expect(later.every((e) => e.seq > snapshot.seq)).toBe(true);
    expect(later.map((e) => e.seq)).toEqual([...later.map((e) => e.seq)].sort((a, b) => a - b));
  });

  it('resumes with `after`: exactly the missed events, once, then live ones', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    const full = await EventLog.of(engine, scope, s.id);
    await converse(s.id, 'one two three');
    const cut = full.events[4]!.seq; // a client that saw up to here and then dropped
    await converse(s.id, 'four five');
    const resumed = await EventLog.of(engine, scope, s.id, cut);
    expect(resumed.events[0]!.type).not.toBe('snapshot');
    expect(resumed.events.map((e) => e.seq)).toEqual(
      full.events.filter((e) => e.seq > cut).map((e) => e.seq),
    );
    await converse(s.id, 'six');
    await resumed.waitFor(
      'turn',
      (e) => (e.data.messages[0]?.content[0] as { text?: string } | undefined)?.text === 'six',
    );
    const seqs = resumed.events.map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  it('falls back to a snapshot when `after` is older than the replay log or unknown', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    const log = await EventLog.of(engine, scope, s.id, 1); // a seq from before this log
    expect(log.events[0]!.type).toBe('snapshot');
    const future = await EventLog.of(engine, scope, s.id, Number.MAX_SAFE_INTEGER);
    expect(future.events[0]!.type).toBe('snapshot');
  });

  it('gives a mid-run joiner the pending and partial messages of the run in flight', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo', opts: { delayMs: 60 } });
    const watcher = await EventLog.of(engine, scope, s.id);
    const { runId } = await engine.service.prompt(scope, s.id, { content: 'alpha beta gamma delta' });
    await watcher.waitFor('text_delta', (e) => e.data.delta.includes('beta'));
    const joiner = await EventLog.of(engine, scope, s.id);
    const snap = joiner.events[0]!;
    if (snap.type !== 'snapshot') throw new Error('expected a snapshot');
    expect(snap.data.session.status).toBe('busy');
    expect(snap.data.inFlight).toMatchObject({ runId, pending: [{ role: 'user' }] });
    const partialText = (snap.data.inFlight!.partial!.content[0] as { text: string }).text;
    expect('Echo: alpha beta gamma delta'.startsWith(partialText)).toBe(true);
    expect(partialText.length).toBeGreaterThan(0);
    // Applying the joiner's later events to the snapshot reproduces what the watcher saw.
    const result = await engine.service.waitForRun(scope, s.id, runId);
    expect(result.status).toBe('completed');
    const text = joiner
      .of('text_delta')
      .map((e) => e.data.delta)
      .join('');
    expect(partialText + text).toBe('Echo: alpha beta gamma delta');
    const turn = newTurn(null, snap.data.inFlight!.pending);
    expect(turn.userText[0]!.text).toBe('alpha beta gamma delta');
  });

  it('projects the same tree for every subscriber (the UI turns match the stored tree)', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    await converse(s.id, 'q');
    const log = await EventLog.of(engine, scope, s.id);
    await engine.service
      .branch(scope, s.id, { nodeId: 1 })
      .then((r) => engine.service.waitForRun(scope, s.id, r.runId));
    const tree = await engine.service.tree(scope, s.id);
    const snap = log.events[0]!;
    if (snap.type !== 'snapshot') throw new Error('expected a snapshot');
    const projected = Tree.hydrate({
      nodes: snap.data.tree.nodes,
      path: snap.data.tree.path,
      cursors: snap.data.tree.cursors,
    });
    for (const e of log.of('tree')) {
      for (const n of e.data.nodes) if (!projected.has(n.id)) projected.addNode(n);
      projected.restorePosition({
        path: e.data.path,
        cursors: new Map(Object.entries(e.data.cursors).map(([k, v]) => [Number(k), v])),
      });
    }
    expect(allTurns(projected)).toEqual(
      allTurns(Tree.hydrate({ nodes: tree.nodes, path: tree.path, cursors: tree.cursors })),
    );
  });
});
