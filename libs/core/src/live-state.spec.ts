import { LiveState, liveStateInit } from './live-state';
import type { SessionInfo } from './events';
import type { TreeNode } from './tree';
import { allTurns } from './turn';

const info: SessionInfo = {
  id: 's1',
  title: null,
  model: 'mock:echo',
  system: null,
  opts: {},
  tools: [],
  metadata: {},
  userId: null,
  status: 'busy',
  pinned: false,
  context: null,
  createdAt: '2026-12-03T10:00:00.000Z',
  updatedAt: '2026-12-03T10:00:00.000Z',
};

/** A live state of a session with no node and no run, and a maker of its next events (seq 1, 2, ...). */
function emptySession() {
  const state = new LiveState(
    liveStateInit({
      seq: 0,
      session: info,
      tree: { nodes: [], path: [], cursors: {}, head: null },
      inFlight: null,
    }),
  );
  let seq = 0;
  const event = (type: string, data: Record<string, unknown>) =>
    ({ seq: ++seq, sessionId: 's1', type, data }) as Parameters<LiveState['apply']>[0];
  return { state, event };
}

describe('LiveState', () => {
  it('continues a message it joined mid-stream from the snapshot’s partial message', () => {
    const { state: server, event } = emptySession();
    server.apply(event('status', { status: 'busy', runId: 'r1' }));
    server.apply(event('text_start', { runId: 'r1', index: 0 }));
    server.apply(event('text_delta', { runId: 'r1', index: 0, delta: 'Hello' }));
    // A subscriber joins here, from the server's snapshot.
    const joined = new LiveState(liveStateInit(server.snapshot()));
    const next = event('text_delta', { runId: 'r1', index: 0, delta: ' world' });
    server.apply(next);
    joined.apply(next);
    expect(joined.runInFlight!.partial!.content).toEqual([{ type: 'text', text: 'Hello world' }]);
    expect(joined.snapshot().inFlight).toEqual(server.snapshot().inFlight);
  });

  it('builds the partial message when read, stamped when its first block started; a snapshot keeps its own', () => {
    const now = jest.spyOn(Date, 'now');
    try {
      const { state, event } = emptySession();
      now.mockReturnValue(1_000);
      state.apply(event('status', { status: 'busy', runId: 'r1' }));
      state.apply(event('text_start', { runId: 'r1', index: 0 }));
      now.mockReturnValue(2_000);
      state.apply(event('text_delta', { runId: 'r1', index: 0, delta: 'Hello' }));
      const before = state.snapshot();
      state.apply(event('text_delta', { runId: 'r1', index: 0, delta: ' world' }));
      expect(state.runInFlight!.partial).toEqual({
        role: 'assistant',
        content: [{ type: 'text', text: 'Hello world' }],
        timestamp: 1_000,
      });
      expect(before.inFlight!.partial!.content).toEqual([{ type: 'text', text: 'Hello' }]);
      // The message is complete: the next one starts a partial message of its own.
      state.apply(event('message', { runId: 'r1', message: state.runInFlight!.partial, nodeId: 1 }));
      expect(state.runInFlight!.partial).toBeNull();
      now.mockReturnValue(3_000);
      state.apply(event('tool_use_start', { runId: 'r1', index: 0, id: 't1', name: 'look' }));
      expect(state.snapshot().inFlight!.partial).toMatchObject({ timestamp: 3_000 });
      state.apply(event('status', { status: 'idle', runId: null }));
      expect(state.runInFlight).toBeNull();
    } finally {
      now.mockRestore();
    }
  });

  it('keeps a taken-over run’s messages once: the re-run replaces the dead attempt’s (same node ids)', () => {
    const { state, event } = emptySession();
    const prompt = { role: 'user', content: [{ type: 'text', text: 'hi' }], timestamp: 1 };
    const reply = { role: 'assistant', content: [{ type: 'text', text: 'Echo: hi' }], timestamp: 2 };
    state.apply(event('status', { status: 'busy', runId: 'r1' }));
    state.apply(event('message', { runId: 'r1', message: prompt, nodeId: 1 }));
    // The worker died here; another one takes the run over and runs it again from the last commit.
    state.apply(event('status', { status: 'busy', runId: 'r1' }));
    state.apply(event('message', { runId: 'r1', message: prompt, nodeId: 1 }));
    state.apply(event('message', { runId: 'r1', message: reply, nodeId: 2 }));
    expect(state.runInFlight!.pending).toEqual([prompt, reply]);
  });

  it('keeps the latest token meter in the session, and a joiner’s snapshot carries it', () => {
    const { state: server, event } = emptySession();
    const meter = { tokens: 1_234, window: 8_192, strategy: 'truncate', summarizedThrough: null };
    server.apply(event('context', { runId: 'r1', kind: 'meter', ...meter }));
    expect(server.session.context).toEqual(meter);
    // The summary's progress is no meter: the session's stays as it was.
    server.apply(event('context', { runId: 'r2', kind: 'summarizing', ...meter, tokens: 9_000 }));
    expect(server.session.context).toEqual(meter);
    const joined = new LiveState(liveStateInit(server.snapshot()));
    expect(joined.session.context).toEqual(meter);
    const next = { tokens: 2_000, window: null, strategy: 'none', summarizedThrough: 4 };
    const later = event('context', { runId: 'r3', kind: 'meter', ...next, message: 'ignored' });
    server.apply(later);
    joined.apply(later);
    expect(joined.snapshot().session.context).toEqual(next);
    expect(server.snapshot().session).toEqual(joined.snapshot().session);
  });
});

describe('LiveState with a path bound', () => {
  const user = (text: string, timestamp = 1) => ({
    role: 'user' as const,
    content: [{ type: 'text' as const, text }],
    timestamp,
  });
  const assistant = (text: string, timestamp = 2) => ({
    role: 'assistant' as const,
    content: [{ type: 'text' as const, text }],
    timestamp,
  });

  /** A session of `turns` prompt-reply turns, as the whole tree a store would load (ids 1, 2, ... along the path). */
  function longSession(turns: number) {
    const nodes: TreeNode[] = [];
    for (let i = 0; i < turns; i++) {
      const u = 2 * i + 1;
      nodes.push({ id: u, parentId: u === 1 ? null : u - 1, message: user(`q${i}`), usage: null });
      nodes.push({ id: u + 1, parentId: u, message: assistant(`a${i}`), usage: null });
    }
    return { nodes, path: nodes.map((n) => n.id) };
  }

  function bounded(turns: number, pathBound: number) {
    const { nodes, path } = longSession(turns);
    const state = new LiveState({
      info,
      nodes,
      path,
      cursors: {},
      nextNodeId: nodes.length + 1,
      inFlight: null,
      seq: 0,
      pathBound,
    });
    let seq = 0;
    const tree = (data: Record<string, unknown>) =>
      ({ seq: ++seq, sessionId: 's1', type: 'tree', data }) as Parameters<LiveState['apply']>[0];
    return { state, path, tree };
  }

  it('keeps the path’s last nodes from a prompt on, and snapshots only them, marked partial', () => {
    const { state, path } = bounded(1_000, 21);
    const snapshot = state.snapshot();
    // The last 21 nodes start at an assistant reply: the path held starts at the prompt after it.
    expect(snapshot.tree.path).toEqual(path.slice(-20));
    expect(snapshot.tree.nodes.map((n) => n.id)).toEqual(path.slice(-20));
    expect(snapshot.tree.partial).toEqual({ firstNodeId: path.at(-20), omitted: 1_980 });
    expect(snapshot.tree.head).toBe(2_000);
    expect(state.holdsWholeTree).toBe(false);
    expect(state.committedTree.size).toBe(21);
    // A client starting from it shows the recent turns.
    const joined = new LiveState(liveStateInit(snapshot));
    expect(allTurns(joined.committedTree).map((t) => t.id)).toEqual(
      path.slice(-20).filter((id) => id % 2 === 1),
    );
    expect(joined.pathOmitted).toBe(1_980);
  });

  it('a session within the bound is whole, and its snapshot has no partial flag (as before bounds)', () => {
    const { state } = bounded(5, 200);
    const snapshot = state.snapshot();
    expect(state.holdsWholeTree).toBe(true);
    expect(snapshot.tree.partial).toBeUndefined();
    expect(snapshot.tree.nodes).toHaveLength(10);
  });

  it('stays bounded while the path grows by commits', () => {
    const { state, path, tree } = bounded(10, 20);
    let head = path.at(-1)!;
    const full = [...path];
    for (let i = 0; i < 5_000; i++) {
      const u = { id: head + 1, parentId: head, message: user(`more ${i}`), usage: null };
      const a = { id: head + 2, parentId: head + 1, message: assistant(`reply ${i}`), usage: null };
      full.push(u.id, a.id);
      head += 2;
      state.apply(tree({ newNodes: [u.id, a.id], nodes: [u, a], path: full, cursors: {}, head }));
      expect(state.committedTree.size).toBeLessThanOrEqual(2 * 20 + 64);
    }
    expect(state.snapshot().tree.nodes).toHaveLength(20);
    expect(state.snapshot().tree.path).toEqual(full.slice(-20));
  });

  it('keeps the versions of the turns shown: a regeneration’s sibling stays, with its turn’s regens', () => {
    const { state, path, tree } = bounded(50, 10);
    // Regenerate the last turn: a second reply to its prompt.
    const prompt = path.at(-2)!;
    const other = { id: 101, parentId: prompt, message: assistant('another'), usage: null };
    const newPath = [...path.slice(0, -1), 101];
    state.apply(
      tree({ newNodes: [101], nodes: [other], path: newPath, cursors: { [prompt]: 101 }, head: 101 }),
    );
    const turns = allTurns(state.committedTree);
    expect(turns.at(-1)).toMatchObject({ id: prompt, resId: 101, regens: [path.at(-1), 101] });
    const snapshot = state.snapshot();
    expect(snapshot.tree.nodes.map((n) => n.id)).toContain(path.at(-1));
    expect(snapshot.tree.cursors).toEqual({ [prompt]: 101 });
  });

  it('a path moved onto nodes not held shows what follows the gap until the nodes are filled in', () => {
    const { nodes, path } = longSession(100);
    const { state, tree } = bounded(100, 10);
    // Navigate back to the 10th turn's reply (node 20): far outside what is held.
    const back = path.slice(0, 20);
    state.apply(tree({ newNodes: [], nodes: [], path: back, cursors: {}, head: 20 }));
    expect(state.missingNodes).toEqual(back.slice(-10));
    expect(state.committedTree.path).toEqual([]);
    expect(state.snapshot().tree.partial).toEqual({ firstNodeId: null, omitted: 20 });
    state.fill(nodes);
    expect(state.missingNodes).toEqual([]);
    expect(state.committedTree.path).toEqual(back.slice(-10));
    // Node 20's child (the 11th prompt) is kept with it: the head's children are what a navigation continues to.
    expect(state.committedTree.has(21)).toBe(true);
    expect(state.committedTree.size).toBe(11);
    expect(state.snapshot().tree.partial).toEqual({ firstNodeId: 11, omitted: 10 });
  });
});
