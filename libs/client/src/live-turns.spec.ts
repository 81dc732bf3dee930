import {
  emptyUsage,
  type Message,
  type SessionEventBody,
  type SessionEventInput,
  type SessionInfo,
  type SessionSnapshot,
  type TreeNode,
} from '@canopy/core';

import { TurnsProjection } from './live-turns';

const info: SessionInfo = {
  id: 's1',
  title: null,
  model: 'mock:echo',
  system: null,
  opts: {},
  tools: [],
  metadata: {},
  userId: null,
  status: 'idle',
  pinned: false,
  context: null,
  createdAt: '2026-11-21T10:00:00.000Z',
  updatedAt: '2026-11-21T10:00:00.000Z',
};

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }], timestamp: 1 });
const assistant = (text: string): Message => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  timestamp: 2,
});
const node = (id: number, parentId: number | null, message: Message): TreeNode => ({
  id,
  parentId,
  message,
  usage: message.role === 'assistant' ? emptyUsage() : null,
});

function snapshot(nodes: TreeNode[], path: number[], seq = 10, inFlight: SessionSnapshot['inFlight'] = null) {
  return {
    seq,
    sessionId: 's1',
    type: 'snapshot',
    data: {
      seq,
      session: { ...info, status: inFlight ? 'busy' : 'idle' },
      tree: { nodes, path, cursors: {}, head: path[path.length - 1] ?? null },
      inFlight,
    },
  } as SessionEventBody;
}

/** Feeds events numbered from `from`. */
function feed(p: TurnsProjection, from: number, events: SessionEventInput[]): number {
  let seq = from;
  for (const e of events) p.apply({ ...e, seq: seq++, sessionId: 's1' });
  return seq;
}

const committed = [node(1, null, user('hi')), node(2, 1, assistant('hello'))];

describe('TurnsProjection', () => {
  it('has no view before the snapshot, then the committed turns', () => {
    const p = new TurnsProjection();
    expect(p.view()).toBeNull();
    p.apply(snapshot(committed, [1, 2]));
    const view = p.view()!;
    expect(view.turns).toHaveLength(1);
    expect(view.turns[0]).toMatchObject({ id: 1, resId: 2, status: 'complete', regens: [2], edits: [1] });
    expect(view.seq).toBe(10);
  });

  it('shows a run a newer prompt interrupted as a committed turn marked interrupted, not as a cancelled run', () => {
    const p = new TurnsProjection();
    p.apply(snapshot(committed, [1, 2]));
    const kept = [user('go on'), { ...assistant('half of the'), interrupted: true as const }];
    feed(p, 11, [
      { type: 'status', data: { status: 'busy', runId: 'r1' } },
      { type: 'message', data: { runId: 'r1', message: user('go on'), nodeId: 3 } },
      { type: 'text_start', data: { runId: 'r1', index: 0 } },
      { type: 'text_delta', data: { runId: 'r1', index: 0, delta: 'half of the' } },
      { type: 'status', data: { status: 'idle', runId: null } },
      {
        type: 'turn',
        data: { runId: 'r1', stop: 'stop', reason: 'interrupted', messages: kept, usage: emptyUsage() },
      },
      {
        type: 'tree',
        data: {
          newNodes: [3, 4],
          nodes: [node(3, 2, kept[0]!), node(4, 3, kept[1]!)],
          path: [1, 2, 3, 4],
          cursors: { '1': 2, '2': 3, '3': 4 },
          head: 4,
        },
      },
    ]);
    const view = p.view()!;
    expect(view.interrupted).toBeNull();
    expect(view.turns).toHaveLength(2);
    expect(view.turns[1]).toMatchObject({ id: 3, resId: 4, status: 'complete', interrupted: true });
    expect(view.turns[0]!.interrupted).toBeUndefined();
  });

  it('shows a prompt run as a new streaming turn, then the committed one', () => {
    const p = new TurnsProjection();
    p.apply(snapshot(committed, [1, 2]));
    let seq = feed(p, 11, [
      { type: 'status', data: { status: 'busy', runId: 'r1' } },
      { type: 'message', data: { runId: 'r1', message: user('again') } },
      { type: 'text_start', data: { runId: 'r1', index: 0 } },
      { type: 'text_delta', data: { runId: 'r1', index: 0, delta: 'Echo:' } },
      { type: 'text_delta', data: { runId: 'r1', index: 0, delta: ' again' } },
    ]);
    let view = p.view()!;
    expect(view.turns).toHaveLength(2);
    expect(view.turns[1]).toMatchObject({ id: null, status: 'streaming', userText: [{ text: 'again' }] });
    // Deltas do not cut the committed path into turns again: the committed turn is the same object.
    const committedTurn = view.turns[0];
    seq = feed(p, seq, [{ type: 'text_delta', data: { runId: 'r1', index: 0, delta: '' } }]);
    expect(p.view()!.turns[0]).toBe(committedTurn);
    expect(view.turns[1]!.content).toEqual([{ type: 'text', text: 'Echo: again' }]);
    expect(view.session.status).toBe('busy');

    const reply = assistant('Echo: again');
    seq = feed(p, seq, [
      { type: 'message', data: { runId: 'r1', message: reply } },
      { type: 'status', data: { status: 'idle', runId: null } },
      {
        type: 'turn',
        data: {
          runId: 'r1',
          stop: 'stop',
          reason: 'stop',
          messages: [user('again'), reply],
          usage: emptyUsage(),
        },
      },
      {
        type: 'tree',
        data: {
          newNodes: [3, 4],
          nodes: [node(3, 2, user('again')), node(4, 3, reply)],
          path: [1, 2, 3, 4],
          cursors: { '1': 2, '2': 3, '3': 4 },
          head: 4,
        },
      },
    ]);
    view = p.view()!;
    expect(view.turns.map((t) => [t.id, t.resId, t.status])).toEqual([
      [1, 2, 'complete'],
      [3, 4, 'complete'],
    ]);
    // Events at or below the applied seq change nothing.
    expect(p.apply({ seq: seq - 1, sessionId: 's1', type: 'title', data: { title: 'late' } })).toBe(false);
  });

  it('keeps the tool progress of the latest run until the next one starts', () => {
    const p = new TurnsProjection();
    p.apply(snapshot(committed, [1, 2]));
    let seq = feed(p, 11, [
      { type: 'status', data: { status: 'busy', runId: 'r1' } },
      { type: 'tool_progress', data: { runId: 'r1', toolUseId: 'tu1', payload: { pct: 50 } } },
      { type: 'tool_progress', data: { runId: 'r1', toolUseId: 'tu1', payload: { pct: 100 } } },
      { type: 'tool_progress', data: { runId: 'r1', toolUseId: 'tu2', payload: 'step' } },
      { type: 'status', data: { status: 'idle', runId: null } },
    ]);
    expect(p.view()!.progress).toEqual({ tu1: [{ pct: 50 }, { pct: 100 }], tu2: ['step'] });
    seq = feed(p, seq, [{ type: 'status', data: { status: 'busy', runId: 'r2' } }]);
    expect(p.view()!.progress).toEqual({});
    expect(seq).toBe(17);
  });

  it('folds a regeneration into the turn of its user node', () => {
    const p = new TurnsProjection();
    p.apply(snapshot(committed, [1, 2]));
    feed(p, 11, [
      { type: 'tree', data: { newNodes: [], nodes: [], path: [1], cursors: {}, head: 1 } },
      { type: 'status', data: { status: 'busy', runId: 'r2' } },
      { type: 'text_start', data: { runId: 'r2', index: 0 } },
      { type: 'text_delta', data: { runId: 'r2', index: 0, delta: 'another' } },
    ]);
    const view = p.view()!;
    expect(view.turns).toHaveLength(1);
    expect(view.turns[0]).toMatchObject({ id: 1, status: 'streaming', regens: [2] });
    expect(view.turns[0]!.content).toEqual([{ type: 'text', text: 'another' }]);
  });

  it('starts from a snapshot taken mid-run, shows tool uses awaiting a decision, and keeps the last error', () => {
    const p = new TurnsProjection();
    const toolUse = { type: 'tool_use' as const, id: 'tu1', name: 'pick', input: { a: 1 } };
    p.apply(
      snapshot(committed, [1, 2], 20, {
        runId: 'r3',
        kind: 'prompt',
        pending: [user('use a tool'), { role: 'assistant', content: [toolUse], timestamp: 3 }],
        partial: null,
        awaiting: [toolUse],
      }),
    );
    let view = p.view()!;
    expect(view.turns).toHaveLength(2);
    expect(view.turns[1]!.content).toEqual([toolUse]);
    expect(view.awaiting).toEqual([toolUse]);

    let seq = feed(p, 21, [
      { type: 'status', data: { status: 'idle', runId: null } },
      { type: 'error', data: { runId: 'r3', code: 'provider_error', message: 'boom' } },
    ]);
    view = p.view()!;
    // The failed run committed nothing: its turn is kept as interrupted, with status error and the error, until
    // the next run starts.
    expect(view.turns).toHaveLength(1);
    expect(view.interrupted).toMatchObject({ runId: 'r3', status: 'error' });
    expect(view.interrupted!.turns.at(-1)).toMatchObject({
      status: 'error',
      error: 'boom',
      content: [toolUse],
    });
    expect(view.awaiting).toEqual([]);
    expect(view.error).toEqual({ code: 'provider_error', message: 'boom' });
    seq = feed(p, seq, [{ type: 'status', data: { status: 'busy', runId: 'r4' } }]);
    expect(p.view()!.turns).toHaveLength(1);
    expect(p.view()!.interrupted).toBeNull();
    expect(seq).toBe(24);
  });

  it('gives a streaming turn no timestamp until it is committed', () => {
    const p = new TurnsProjection();
    p.apply(snapshot(committed, [1, 2]));
    feed(p, 11, [
      { type: 'status', data: { status: 'busy', runId: 'r1' } },
      { type: 'message', data: { runId: 'r1', message: user('more') } },
      { type: 'message', data: { runId: 'r1', message: assistant('a first step') } },
      { type: 'text_start', data: { runId: 'r1', index: 0 } },
    ]);
    expect(p.view()!.turns[1]).toMatchObject({ status: 'streaming', timestamp: null });
    expect(p.view()!.turns[0]).toMatchObject({ status: 'complete', timestamp: 2 });
  });

  it('keeps the turn a failed regeneration was answering as interrupted, after its rollback', () => {
    const p = new TurnsProjection();
    p.apply(snapshot(committed, [1, 2]));
    feed(p, 11, [
      { type: 'status', data: { status: 'busy', runId: 'r5' } },
      { type: 'tree', data: { newNodes: [], nodes: [], path: [1], cursors: {}, head: 1 } },
      { type: 'store', data: { ok: true, kind: 'tree' } },
      { type: 'status', data: { status: 'idle', runId: null } },
      { type: 'error', data: { runId: 'r5', code: 'provider_error', message: 'overloaded' } },
      { type: 'tree', data: { newNodes: [], nodes: [], path: [1, 2], cursors: { '1': 2 }, head: 2 } },
    ]);
    // The committed turn is back as it was; the failed regeneration of it is kept as interrupted, marked.
    expect(p.view()!.turns).toEqual([expect.objectContaining({ id: 1, resId: 2, status: 'complete' })]);
    expect(p.view()!.interrupted!.turns).toEqual([
      expect.objectContaining({ id: 1, status: 'error', error: 'overloaded' }),
    ]);
  });
});
