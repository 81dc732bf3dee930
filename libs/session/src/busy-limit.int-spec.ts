// The tenant's limit of runs in flight (MAX_CONCURRENT_RUNS_PER_TENANT) through the engine on a real Postgres: a
// tenant far below it skips the count in the database between counts (BusyLimitGate), near it every start counts,
// so one process refuses exactly at the limit; another process's starts are seen at its next count.

import type { Scope } from '@canopy/core';
import type { StartRunInput } from '@canopy/store';
import { EngineHarness, type Engine } from '@canopy/testing/engine-harness';

// A count stays fresh for the whole test (1 s by default): what is skipped does not depend on the machine's speed.
const h = new EngineHarness({ maxBusyPerTenant: 4, busyCountMaxAgeMs: 600_000 });
let engine: Engine;

/** What each start asked the store to count against (the limit, or undefined when it skipped the count). */
function recordCounts(e: Engine): Array<number | undefined> {
  const asked: Array<number | undefined> = [];
  const store = e.deps.store;
  const startRun = store.startRun.bind(store);
  store.startRun = (scope: Scope, input: StartRunInput) => {
    asked.push(input.maxBusy);
    return startRun(scope, input);
  };
  return asked;
}

async function slowSessions(e: Engine, scope: Scope, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.push((await e.manager.create(scope, { model: 'mock:echo', opts: { delayMs: 200 } })).id);
  }
  return ids;
}

beforeAll(async () => {
  engine = await h.setup();
});
afterAll(() => h.teardown());

it('skips the count far below the limit, counts from half of it, and refuses exactly at it', async () => {
  const scope = await h.newTenant();
  const asked = recordCounts(engine);
  const ids = await slowSessions(engine, scope, 5);
  for (const id of ids.slice(0, 4)) await engine.service.prompt(scope, id, { content: 'a b c d e f g h' });
  await expect(engine.service.prompt(scope, ids[4]!, { content: 'one too many' })).rejects.toMatchObject({
    code: 'rate_limited',
  });
  // 1st: no count yet; 2nd: 1 busy, under half of 4, skipped; 3rd (2 busy), 4th and 5th: counted.
  expect(asked).toEqual([4, undefined, 4, 4, 4]);
  for (const id of ids.slice(0, 4)) await engine.service.cancel(scope, id);
});

it("sees another process's starts at its next count", async () => {
  const scope = await h.newTenant();
  const other = h.engine(engine);
  const ids = await slowSessions(engine, scope, 5);
  await engine.service.prompt(scope, ids[0]!, { content: 'a b c d e f g h' }); // counted: 1 busy
  // The other process fills the tenant up to its limit (it counts for itself: 1, 2, then 3 busy).
  for (const id of ids.slice(1, 4)) await other.service.prompt(scope, id, { content: 'a b c d e f g h' });
  await expect(other.service.prompt(scope, ids[4]!, { content: 'no room' })).rejects.toMatchObject({
    code: 'rate_limited',
  });
  // This process skips one count on its stale view (1 busy), the tenant passes its soft limit by that one run;
  // the start after counts and is refused.
  const asked = recordCounts(engine);
  await engine.service.prompt(scope, ids[4]!, { content: 'a b c d e f g h' });
  const sixth = (await engine.manager.create(scope, { model: 'mock:echo' })).id;
  await expect(engine.service.prompt(scope, sixth, { content: 'refused' })).rejects.toMatchObject({
    code: 'rate_limited',
  });
  expect(asked).toEqual([undefined, 4]);
  for (const id of ids) await engine.service.cancel(scope, id);
});
