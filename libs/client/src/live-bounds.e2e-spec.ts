// A long conversation live, against the built api: its snapshot holds the active path's recent part only
// (LIVE_PATH_NODES, here 200) and says so, the SDK's live turns page the earlier turns as a user scrolls up, and
// regenerate, edit and navigate work on nodes far outside what the live session keeps.

import { canopyDocument, eventually } from '@canopy/testing';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../../apps/api/test/support/test-app';
import { Canopy, type Session, type SessionEventBody } from './index';

const LONG = 10_000;

let t: TestApp;
let canopy: Canopy;

beforeAll(async () => {
  // A bound of 200 (the default is smaller): the figures below are written for it.
  t = await startTestApp({ env: { SESSION_IDLE_SHUTDOWN_MS: '60000', LIVE_PATH_NODES: '200' } });
  const admin = new Canopy({ baseUrl: t.url, credential: TEST_ADMIN_KEY });
  canopy = new Canopy({ baseUrl: t.url, credential: (await admin.admin.createTenant('long')).apiKey });
}, 60_000);

afterAll(async () => {
  await t?.close();
});

/** A linear conversation of `n` messages (user, assistant, ...), imported. */
async function imported(n: number): Promise<Session> {
  const { session } = await canopy.sessions.import({
    format: 'canopy',
    data: canopyDocument(n),
    model: 'mock:echo',
  });
  return session;
}

/** The first event of a new subscription: its snapshot. */
async function snapshotOf(session: Session) {
  const controller = new AbortController();
  for await (const event of session.events({ signal: controller.signal })) {
    controller.abort();
    return event as Extract<SessionEventBody, { type: 'snapshot' }>;
  }
  throw new Error('no snapshot');
}

it('sends a bounded snapshot of a long session, marked partial, and the whole snapshot of a short one', async () => {
  const long = await imported(LONG);
  const short = await imported(10);
  const big = await snapshotOf(long);
  const small = await snapshotOf(short);
  expect(small.data.tree.partial).toBeUndefined();
  expect(small.data.tree.nodes).toHaveLength(10);
  expect(big.data.tree.head).toBe(LONG);
  expect(big.data.tree.path).toEqual(Array.from({ length: 200 }, (_, i) => LONG - 199 + i));
  expect(big.data.tree.nodes).toHaveLength(200);
  expect(big.data.tree.partial).toEqual({ firstNodeId: LONG - 199, omitted: LONG - 200 });
  // Bounded by the bound, not by the conversation: 10,000 messages weigh what 200 do.
  const bytes = (e: unknown) => Buffer.byteLength(JSON.stringify(e));
  const atBound = await snapshotOf(await imported(200));
  expect(bytes(big)).toBeLessThan(1.2 * bytes(atBound));
}, 60_000);

it('the SDK’s live turns show the recent turns and load earlier pages up to the first turn', async () => {
  const session = await imported(LONG);
  const live = session.turns();
  try {
    const first = await live.ready();
    expect(first.turns).toHaveLength(100);
    expect(first.turns[0]!.id).toBe(LONG - 199);
    expect(first.hasEarlier).toBe(true);
    expect(await live.loadEarlier(30)).toBe(true);
    const paged = live.current!;
    expect(paged.turns).toHaveLength(130);
    expect(paged.turns.map((turn) => turn.id)).toEqual(
      Array.from({ length: 130 }, (_, i) => LONG - 259 + 2 * i),
    );
    expect(paged.hasEarlier).toBe(true);
    while (live.current!.hasEarlier) expect(await live.loadEarlier(1_000)).toBe(true);
    const all = live.current!;
    expect(all.hasEarlier).toBe(false);
    expect(all.turns.map((turn) => turn.id)).toEqual(Array.from({ length: LONG / 2 }, (_, i) => 1 + 2 * i));
    expect(await live.loadEarlier()).toBe(false);
    // A new turn joins the end; the pages loaded stay.
    await session.run('one more');
    const grown = await live.until(
      (v) => v.turns.length === LONG / 2 + 1 && v.turns.at(-1)!.status === 'complete',
    );
    expect(grown.turns.at(-1)!.userText).toEqual([{ type: 'text', text: 'one more' }]);
    expect(grown.turns[0]!.id).toBe(1);
  } finally {
    await live.close();
  }
}, 120_000);

it('regenerates, edits and navigates at nodes far outside what the live session keeps', async () => {
  const session = await imported(LONG);
  const live = session.turns();
  try {
    await live.ready();
    // Regenerate the 6th prompt (node 11): a new reply, the path cut there.
    const regenerated = await session.branchAndWait(11);
    expect(regenerated.status).toBe('completed');
    const afterRegen = await session.tree();
    expect(afterRegen.path.slice(0, 11)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(afterRegen.path).toHaveLength(12);
    const reply = afterRegen.path[11]!;
    expect(afterRegen.nodes.find((n) => n.id === reply)!.parentId).toBe(11);
    // The live view follows: the turn of node 11 with its two versions, nothing after it.
    const shown = await live.until((v) => v.turns.at(-1)?.id === 11 && v.turns.at(-1)?.resId === reply);
    expect(shown.turns.at(-1)!.regens).toEqual([12, reply]);
    expect(shown.turns.map((turn) => turn.id)).toEqual([1, 3, 5, 7, 9, 11]);
    expect(shown.hasEarlier).toBe(false);

    // Edit the prompt after node 20 (an assistant reply far from the head), then go back to the old tip.
    const edited = await session.branchAndWait(20, 'edited');
    expect(edited.status).toBe('completed');
    const afterEdit = await session.tree();
    expect(afterEdit.path).toHaveLength(22);
    expect(afterEdit.nodes.find((n) => n.id === afterEdit.path[20])!.message).toMatchObject({
      role: 'user',
      content: [{ type: 'text', text: 'edited' }],
    });
    const moved = await session.navigate(LONG);
    expect(moved.head).toBe(LONG);
    expect(moved.path).toHaveLength(LONG);

    // A new subscriber starts from the recent part of the path navigated back to, and the live view shows it.
    const snapshot = await snapshotOf(session);
    expect(snapshot.data.tree.head).toBe(LONG);
    expect(snapshot.data.tree.partial).toEqual({ firstNodeId: LONG - 199, omitted: LONG - 200 });
    const back = await live.until((v) => v.turns.at(-1)?.id === LONG - 1);
    expect(back.turns).toHaveLength(100);
    expect(back.hasEarlier).toBe(true);
    // The turn that was edited far back shows both prompts when paged in.
    while (live.current!.hasEarlier) await live.loadEarlier(1_000);
    const editedTurn = live.current!.turns.find((turn) => turn.id === 21)!;
    expect(editedTurn.edits).toEqual([21, afterEdit.path[20]]);
  } finally {
    await live.close();
  }
}, 120_000);

it('a regeneration of the last turn of a long session stays within what is held', async () => {
  const session = await imported(LONG);
  const before = await snapshotOf(session);
  const result = await session.branchAndWait(LONG - 1);
  expect(result.status).toBe('completed');
  await eventually(async () => {
    const after = await snapshotOf(session);
    expect(after.data.tree.head).not.toBe(LONG);
    expect(after.data.tree.nodes.length).toBeLessThanOrEqual(before.data.tree.nodes.length + 1);
  });
}, 60_000);
