import { LiveState, liveStateInit } from './live-state';
import type { SessionInfo } from './events';

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
