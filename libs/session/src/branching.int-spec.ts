// Branching through the engine: regenerate, edit, new root,
// navigate; idle-only refusals; a branch that fails or is cancelled before its first commit rolls back.

import { allTurns, Tree, type Scope } from '@canopy/core';
import { EngineHarness, EventLog, converse as conversed, type Engine } from '@canopy/testing/engine-harness';

const h = new EngineHarness();
let engine: Engine;

beforeAll(async () => {
  engine = await h.setup();
});
afterAll(() => h.teardown());

async function converse(scope: Scope, id: string, content: string) {
  const result = await conversed(engine, scope, id, content);
  expect(result.status).toBe('completed');
  return result;
}

async function treeOf(scope: Scope, id: string): Promise<Tree> {
  const t = await engine.service.tree(scope, id);
  return Tree.hydrate({ nodes: t.nodes, path: t.path, cursors: t.cursors });
}

async function branch(scope: Scope, id: string, nodeId: number | null, content?: string) {
  const { runId } = await engine.service.branch(scope, id, { nodeId, content });
  return engine.service.waitForRun(scope, id, runId);
}

describe('branching (regenerate, edit, new root, navigate), through the engine', () => {
  let scope: Scope;
  let id: string;

  beforeAll(async () => {
    scope = await h.newTenant();
    id = (await engine.manager.create(scope, { model: 'mock:echo', title: 'Mountains' })).id;
    await converse(scope, id, 'Name three mountains.');
    await converse(scope, id, 'Now three rivers.');
  });

  it('builds a linear conversation first: user, assistant, user, assistant', async () => {
    const tree = await treeOf(scope, id);
    expect(tree.path).toEqual([1, 2, 3, 4]);
    expect(tree.messages().map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it('regenerates a turn: a fresh reply as a sibling of the original, under the same user node', async () => {
    const result = await branch(scope, id, 3);
    expect(result.status).toBe('completed');
    expect(result.messages.map((m) => m.nodeId)).toEqual([5]); // the reply only: the prompt is not duplicated
    const tree = await treeOf(scope, id);
    expect(tree.children(3)).toEqual([4, 5]);
    expect(tree.path).toEqual([1, 2, 3, 5]);
    expect(tree.getMessage(5)!.content).toEqual([{ type: 'text', text: 'Echo: Now three rivers.' }]);
  });

  it('edits the next user message: a new user message and its reply as children of the assistant', async () => {
    const result = await branch(scope, id, 2, 'Three lakes instead.');
    expect(result.messages.map((m) => [m.nodeId, m.message.role])).toEqual([
      [6, 'user'],
      [7, 'assistant'],
    ]);
    const tree = await treeOf(scope, id);
    expect(tree.children(2)).toEqual([3, 6]);
    expect(tree.siblings(6)).toEqual([3]);
    expect(tree.path).toEqual([1, 2, 6, 7]);
  });

  it('shows edits and regenerations in the UI turns', async () => {
    const turns = allTurns(await treeOf(scope, id));
    expect(turns.map((t) => [t.id, t.resId])).toEqual([
      [1, 2],
      [6, 7],
    ]);
    expect(turns[1]!.edits).toEqual([3, 6]);
    await engine.service.navigate(scope, id, 5);
    const back = allTurns(await treeOf(scope, id));
    expect(back[1]).toMatchObject({ id: 3, resId: 5, regens: [4, 5], edits: [3, 6] });
  });

  it('navigates between siblings and always lands on a tip', async () => {
    expect((await engine.service.navigate(scope, id, 4)).path).toEqual([1, 2, 3, 4]);
    expect((await engine.service.navigate(scope, id, 6)).path).toEqual([1, 2, 6, 7]);
    // Interior node: extend follows the cursors the navigations pinned.
    expect((await engine.service.navigate(scope, id, 2)).path).toEqual([1, 2, 6, 7]);
    expect((await engine.service.navigate(scope, id, 3)).path).toEqual([1, 2, 3, 4]);
  });

  it('starts a disjoint root with branch(null, content)', async () => {
    const result = await branch(scope, id, null, 'A new topic.');
    expect(result.messages.map((m) => m.nodeId)).toEqual([8, 9]);
    const tree = await treeOf(scope, id);
    expect(tree.roots()).toEqual([1, 8]);
    expect(tree.path).toEqual([8, 9]);
  });

  it('clears the path with navigate(null); the next prompt starts another root', async () => {
    const cleared = await engine.service.navigate(scope, id, null);
    expect(cleared).toMatchObject({ path: [], head: null });
    await converse(scope, id, 'Third root.');
    const tree = await treeOf(scope, id);
    expect(tree.roots()).toEqual([1, 8, 10]);
    expect(tree.path).toEqual([10, 11]);
    expect(tree.size).toBe(11);
  });

  it('persists everything: a restarted engine sees the same tree', async () => {
    const before = await engine.service.tree(scope, id);
    const restarted = h.engine(engine);
    const after = await restarted.service.tree(scope, id);
    expect(after.nodes).toEqual(before.nodes);
    expect(after.path).toEqual(before.path);
    expect(after.cursors).toEqual(before.cursors);
    expect(after.usage).toEqual(before.usage);
  });
});

describe('branch and navigate validation', () => {
  let scope: Scope;
  let id: string;

  beforeAll(async () => {
    scope = await h.newTenant();
    id = (await engine.manager.create(scope, { model: 'mock:echo' })).id;
    await converse(scope, id, 'one');
  });

  it('answers not_user_node / not_assistant_node for a target of the wrong role', async () => {
    await expect(engine.service.branch(scope, id, { nodeId: 2 })).rejects.toMatchObject({
      code: 'not_user_node',
    });
    await expect(engine.service.branch(scope, id, { nodeId: 1, content: 'x' })).rejects.toMatchObject({
      code: 'not_assistant_node',
    });
  });

  it('answers not_found for an unknown node and bad_request for a new root without content', async () => {
    await expect(engine.service.branch(scope, id, { nodeId: 99 })).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(engine.service.navigate(scope, id, 99)).rejects.toMatchObject({ code: 'not_found' });
    await expect(engine.service.branch(scope, id, { nodeId: null })).rejects.toMatchObject({
      code: 'bad_request',
    });
  });

  it('refuses idle-only commands while busy (session_busy) and while paused (session_paused)', async () => {
    await engine.manager.update(scope, id, { opts: { delayMs: 100 } });
    const { runId } = await engine.service.prompt(scope, id, { content: 'slow reply please' });
    await expect(engine.service.navigate(scope, id, 1)).rejects.toMatchObject({ code: 'session_busy' });
    await expect(engine.service.branch(scope, id, { nodeId: 1 })).rejects.toMatchObject({
      code: 'session_busy',
    });
    await expect(engine.manager.update(scope, id, { model: 'mock:script' })).rejects.toMatchObject({
      code: 'session_busy',
    });
    await expect(engine.service.prompt(scope, id, { content: 'again' })).rejects.toMatchObject({
      code: 'session_busy',
    });
    // Metadata and title are not idle-only.
    await expect(engine.manager.update(scope, id, { metadata: { k: 'v' } })).resolves.toMatchObject({
      metadata: { k: 'v' },
    });
    await engine.service.waitForRun(scope, id, runId);
    await engine.manager.update(scope, id, { opts: {} });

    const paused = (
      await engine.manager.create(scope, {
        model: 'mock:script',
        opts: { script: [{ toolCalls: [{ name: 'ask', input: {} }] }] },
        tools: [{ name: 'ask', description: 'ask the user', inputSchema: { type: 'object' } }],
      })
    ).id;
    const run = await engine.service.prompt(scope, paused, { content: 'q' });
    expect((await engine.service.waitForRun(scope, paused, run.runId)).status).toBe('paused');
    await expect(engine.service.navigate(scope, paused, 1)).rejects.toMatchObject({ code: 'session_paused' });
    await expect(engine.service.branch(scope, paused, { nodeId: 1 })).rejects.toMatchObject({
      code: 'session_paused',
    });
  });
});

describe('rollback of a branch that never committed', () => {
  let scope: Scope;

  beforeAll(async () => {
    scope = await h.newTenant();
  });

  it('restores path and cursors when the branch run fails: status idle, error, tree, store', async () => {
    const id = (
      await engine.manager.create(scope, {
        model: 'mock:script',
        opts: { script: [{ text: 'first' }, { text: 'second' }] },
      })
    ).id;
    await converse(scope, id, 'q1');
    await converse(scope, id, 'q2');
    const before = await engine.service.tree(scope, id);
    await engine.manager.update(scope, id, { opts: { script: [{ error: 'model exploded' }] } });
    const log = await EventLog.of(engine, scope, id);
    const from = log.events.length;
    const result = await branch(scope, id, 1);
    expect(result).toMatchObject({ status: 'error', error: { message: 'model exploded' } });
    const failed = await log.waitFor('error');
    await log.waitFor('store', (e) => e.seq > failed.seq);
    await log.waitFor('state', (e) => e.seq > failed.seq);
    await log.waitFor('context', (e) => e.seq > failed.seq);
    // The branch's start is a tree change like any other (tree, then store); the rollback ends with `state`, and
    // the token meter of the restored head follows.
    expect(log.milestones(from)).toEqual([
      'status',
      'tree',
      'store',
      'status',
      'error',
      'tree',
      'store',
      'state',
      'context',
    ]);
    const after = await engine.service.tree(scope, id);
    expect(after.path).toEqual(before.path);
    expect(after.cursors).toEqual(before.cursors);
    expect(after.nodes).toEqual(before.nodes);
    expect((await engine.service.get(scope, id)).status).toBe('idle');
  });

  it('restores the path when a branch run is cancelled mid-stream, and commits nothing of it', async () => {
    const id = (await engine.manager.create(scope, { model: 'mock:echo' })).id;
    await converse(scope, id, 'alpha beta');
    await converse(scope, id, 'gamma delta');
    const before = await engine.service.tree(scope, id);
    await engine.manager.update(scope, id, { opts: { delayMs: 50 } });
    const log = await EventLog.of(engine, scope, id);
    const from = log.events.length;
    const { runId } = await engine.service.branch(scope, id, { nodeId: 1 });
    await log.waitFor('text_delta');
    expect(await engine.service.cancel(scope, id)).toEqual({ runId });
    const result = await engine.service.waitForRun(scope, id, runId);
    expect(result.status).toBe('cancelled');
    const cancelled = await log.waitFor('cancelled');
    expect(cancelled.data.partial.length).toBeGreaterThan(0); // the partial reply streamed so far
    await log.waitFor('store', (e) => e.seq > cancelled.seq);
    await log.waitFor('state', (e) => e.seq > cancelled.seq);
    await log.waitFor('context', (e) => e.seq > cancelled.seq);
    expect(log.milestones(from)).toEqual([
      'status',
      'tree',
      'store',
      'status',
      'cancelled',
      'tree',
      'store',
      'state',
      'context',
    ]);
    const after = await engine.service.tree(scope, id);
    expect(after).toEqual(before);
    await expect(engine.service.cancel(scope, id)).rejects.toMatchObject({ code: 'idle' });
  });

  it('keeps what a branch committed: no rollback once the first commit happened', async () => {
    const id = (await engine.manager.create(scope, { model: 'mock:echo' })).id;
    await converse(scope, id, 'root');
    const result = await branch(scope, id, 1);
    expect(result.status).toBe('completed');
    expect((await engine.service.tree(scope, id)).path).toEqual([1, 3]);
  });
});
