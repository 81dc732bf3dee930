// The session engine end to end on the machine's Postgres: a conversation, its events in order, its tree.

import { EngineHarness, EventLog, type Engine } from '@canopy/testing/engine-harness';

const h = new EngineHarness();
let engine: Engine;

beforeAll(async () => {
  engine = await h.setup();
});
afterAll(() => h.teardown());

describe('a prompt with mock:echo', () => {
  it('streams, commits and emits events in the contract order', async () => {
    const scope = await h.newTenant();
    const session = await engine.manager.create(scope, { model: 'mock:echo' });
    const log = await EventLog.of(engine, scope, session.id);
    const { runId } = await engine.service.prompt(scope, session.id, { content: 'hello there world' });
    const result = await engine.service.waitForRun(scope, session.id, runId);
    expect(result.status).toBe('completed');
    await log.waitFor('store', (e) => e.data.kind === 'state');
    await log.waitFor('context'); // the token meter, once the run has ended
    expect(log.milestones()).toEqual([
      'snapshot',
      'status',
      'message',
      'message',
      'step',
      'status',
      'turn',
      'tree',
      'store',
      'title',
      'store',
      'context',
    ]);
    const seqs = log.events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    const tree = await engine.service.tree(scope, session.id);
    expect(tree.path).toEqual([1, 2]);
    expect(tree.nodes[1]!.message.content).toEqual([{ type: 'text', text: 'Echo: hello there world' }]);
    expect(tree.nodes[1]!.usage).toMatchObject({ inputTokens: 3, outputTokens: 4 });
    const turn = engine.service.toTurnResult(session.id, result);
    expect(turn.finalResponse).toBe('Echo: hello there world');
    expect((await engine.service.get(scope, session.id)).title).toBe('hello there world');
  });
});
