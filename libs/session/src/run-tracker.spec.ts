import { emptyUsage, userMessage, type SessionEvent, type SessionEventInput } from '@canopy/core';
import { RunTracker } from './run-tracker';

let seq = 0;
const ev = (input: SessionEventInput, at: number): SessionEvent => ({
  ...input,
  seq: ++seq,
  sessionId: 's1',
  at,
});

const user = (text: string) => userMessage(text, 0);

/** The events of one run from start to commit, as the engine publishes them. */
function completedRun(tracker: RunTracker, runId: string, at: number, node: number): void {
  tracker.observe(ev({ type: 'status', data: { status: 'busy', runId } }, at));
  tracker.observe(ev({ type: 'message', data: { runId, message: user(runId) } }, at));
  tracker.observe(ev({ type: 'status', data: { status: 'idle', runId: null } }, at));
  tracker.observe(
    ev(
      { type: 'turn', data: { runId, stop: 'stop', reason: 'stop', messages: [], usage: emptyUsage() } },
      at,
    ),
  );
  tracker.observe(
    ev({ type: 'tree', data: { newNodes: [node], nodes: [], path: [node], cursors: {}, head: node } }, at),
  );
}

describe('RunTracker', () => {
  it('forgets finished runs once their results are older than keepMs', async () => {
    const tracker = new RunTracker(1_000);
    for (let i = 0; i < 10; i++) completedRun(tracker, `r${i}`, i, i + 1);
    expect(tracker.size).toBe(10);
    await expect(tracker.wait('r9')).resolves.toMatchObject({ status: 'completed' });
    // Any later event prunes what is past keepMs: only the newest run stays.
    completedRun(tracker, 'r10', 5_000, 11);
    expect(tracker.size).toBe(1);
  });

  it('ends a run whose end it never saw when the session starts its next run, answering its waiters', async () => {
    const tracker = new RunTracker(1_000);
    tracker.observe(ev({ type: 'status', data: { status: 'busy', runId: 'lost' } }, 0));
    tracker.observe(ev({ type: 'message', data: { runId: 'lost', message: user('lost') } }, 0));
    const waiting = tracker.wait('lost');
    // Its turn, tree and idle status were lost (a Redis that restarted empty); the next run starts.
    completedRun(tracker, 'next', 10, 1);
    await expect(waiting).resolves.toMatchObject({
      runId: 'lost',
      status: 'error',
      error: { code: 'unavailable' },
    });
    completedRun(tracker, 'later', 5_000, 2);
    expect(tracker.size).toBe(1); // neither is followed for ever
  });

  it('leaves alone a run that is only waited for (queued, not started) when another starts', () => {
    const tracker = new RunTracker(60_000);
    void tracker.wait('queued');
    completedRun(tracker, 'current', 0, 1);
    expect(tracker.result('queued')).toBeNull();
    completedRun(tracker, 'queued', 1, 2);
    expect(tracker.result('queued')).toMatchObject({ status: 'completed' });
  });

  it('ends a run interrupted by a newer prompt as cancelled, with what it kept and the nodes it took', async () => {
    const tracker = new RunTracker(60_000);
    const prompt = user('go');
    const partial = {
      role: 'assistant' as const,
      content: [{ type: 'text' as const, text: 'half' }],
      timestamp: 0,
    };
    tracker.observe(ev({ type: 'status', data: { status: 'busy', runId: 'r' } }, 0));
    tracker.observe(ev({ type: 'message', data: { runId: 'r', message: prompt, nodeId: 3 } }, 0));
    const waiting = tracker.wait('r');
    tracker.observe(ev({ type: 'status', data: { status: 'idle', runId: null } }, 5));
    const kept = [prompt, { ...partial, interrupted: true as const }];
    tracker.observe(
      ev(
        {
          type: 'turn',
          data: { runId: 'r', stop: 'stop', reason: 'interrupted', messages: kept, usage: emptyUsage() },
        },
        5,
      ),
    );
    tracker.observe(
      ev(
        { type: 'tree', data: { newNodes: [3, 4], nodes: [], path: [1, 2, 3, 4], cursors: {}, head: 4 } },
        5,
      ),
    );
    await expect(waiting).resolves.toMatchObject({
      status: 'cancelled',
      error: null,
      messages: [
        { nodeId: 3, message: prompt },
        { nodeId: 4, message: kept[1] },
      ],
    });
  });
});
