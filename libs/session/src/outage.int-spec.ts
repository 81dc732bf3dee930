// Runs through a database outage (the embedded database restarting, Postgres going away): a run's commit or end
// that committed but whose answer was lost is taken as done when its retry is refused, not as a failure (before,
// the run was fenced out silently: its waiters never answered and its session looked busy); a run's writes wait for
// a database that comes back within their retry budget; and once the database is back, a run the outage left
// unfinished with nothing executing it is ended (the session idle again), while runs executing are left alone.

import { CanopyException } from '@canopy/common';
import type { Scope } from '@canopy/core';
import type { CommitInput, EndRunInput } from '@canopy/store';
import { eventually } from '@canopy/testing';
import { EngineHarness, type Engine } from '@canopy/testing/engine-harness';

const h = new EngineHarness();
let engine: Engine;
let scope: Scope;

beforeAll(async () => {
  engine = await h.setup();
  scope = await h.newTenant();
});
afterAll(() => h.teardown());

const lost = () =>
  CanopyException.unavailable('the database is unavailable', new Error('Connection terminated'));

/** The run's result, or 'no answer' when none comes within ms (a run fenced out silently never answers). */
async function resultWithin(id: string, runId: string, ms = 15_000) {
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([
    engine.service.waitForRun(scope, id, runId),
    new Promise<'no answer'>((r) => (timer = setTimeout(() => r('no answer'), ms))),
  ]);
  clearTimeout(timer);
  return result;
}

describe('a run through a database outage', () => {
  it('takes a commit that landed, though its answer was lost, as done', async () => {
    const store = engine.deps.store;
    const commit = store.commit.bind(store);
    let dropped = 0;
    // The database commits, then goes away before its answer reaches the service.
    store.commit = async (s: Scope, input: CommitInput) => {
      const result = await commit(s, input);
      if (dropped++ === 0) throw lost();
      return result;
    };
    try {
      const session = await engine.manager.create(scope, { model: 'mock:echo' });
      const { runId } = await engine.service.prompt(scope, session.id, { content: 'kept once' });
      const result = await resultWithin(session.id, runId);
      expect(result).toMatchObject({ status: 'completed' });
      expect(dropped).toBe(2); // the retry was refused (fenced): the first attempt had ended the run
      expect(await engine.service.getRun(scope, runId)).toMatchObject({ status: 'completed' });
      const tree = await engine.service.tree(scope, session.id);
      expect(tree.nodes.map((n) => n.message.role)).toEqual(['user', 'assistant']);
      expect((await engine.service.get(scope, session.id)).status).toBe('idle');
    } finally {
      store.commit = commit;
    }
  });

  it('takes an end that landed, though its answer was lost, as done', async () => {
    const store = engine.deps.store;
    const endRun = store.endRun.bind(store);
    let dropped = 0;
    store.endRun = async (s: Scope, input: EndRunInput) => {
      const result = await endRun(s, input);
      if (dropped++ === 0) throw lost();
      return result;
    };
    try {
      const session = await engine.manager.create(scope, { model: 'mock:echo', opts: { delayMs: 200 } });
      const { runId } = await engine.service.prompt(scope, session.id, {
        content: 'one two three four five',
      });
      await engine.service.cancel(scope, session.id);
      const result = await resultWithin(session.id, runId);
      expect(result).toMatchObject({ status: 'cancelled' });
      expect(dropped).toBe(2);
      expect((await engine.service.get(scope, session.id)).status).toBe('idle');
    } finally {
      store.endRun = endRun;
    }
  });

  it('waits for a database that comes back within the retry budget, and commits then', async () => {
    const store = engine.deps.store;
    const commit = store.commit.bind(store);
    const downUntil = Date.now() + 3_000; // longer than the first three retries (1.7 s)
    let refused = 0;
    store.commit = (s: Scope, input: CommitInput) => {
      if (Date.now() < downUntil) {
        refused++;
        return Promise.reject(lost());
      }
      return commit(s, input);
    };
    try {
      const session = await engine.manager.create(scope, { model: 'mock:echo' });
      const { runId } = await engine.service.prompt(scope, session.id, { content: 'after the outage' });
      expect(await resultWithin(session.id, runId)).toMatchObject({ status: 'completed' });
      expect(refused).toBeGreaterThan(3);
      expect((await engine.service.tree(scope, session.id)).nodes).toHaveLength(2);
    } finally {
      store.commit = commit;
    }
  });

  it('ends, once the database is back, a run the outage left unfinished with nothing executing it', async () => {
    // What a start caught by the outage leaves: the run recorded, the session busy, nothing to execute it.
    const orphan = await engine.manager.create(scope, { model: 'mock:echo' });
    const started = await engine.deps.store.startRun(scope, {
      sessionId: orphan.id,
      kind: 'prompt',
      input: { content: 'never executed' },
      status: 'running',
    });
    if (!started.ok) throw new Error(`startRun refused: ${started.reason}`);
    // A run executing here meanwhile is left to finish on its own.
    const busy = await engine.manager.create(scope, { model: 'mock:echo', opts: { delayMs: 100 } });
    const { runId: executing } = await engine.service.prompt(scope, busy.id, {
      content: 'one two three four five six',
    });
    await eventually(() => expect(engine.duties.isExecuting(executing)).toBe(true));

    const ended = await engine.duties.recoverAfterDatabaseOutage(100);

    expect(ended).toBe(1);
    expect(await engine.service.getRun(scope, started.run.id)).toMatchObject({
      status: 'error',
      error: { code: 'interrupted' },
    });
    expect((await engine.service.get(scope, orphan.id)).status).toBe('idle');
    expect(await resultWithin(busy.id, executing)).toMatchObject({ status: 'completed' });
  });
});
