// The Postgres SessionStore against the machine's Postgres (a database of its own, RLS enforced): every port
// method, tenant and user isolation, keyset pagination, the compare-and-set rules under real concurrency, and
// the statement and round-trip counts of the hot paths.

import { randomUUID } from 'node:crypto';
import { CanopyException } from '@canopy/common';
import { Client } from 'pg';
import { adminUrl, createTestDatabase, type TestDatabase } from '@canopy/testing';
import {
  addUsage,
  assistantMessage,
  emptyUsage,
  makeUsage,
  systemScope,
  tenantScope,
  userMessage,
  type Scope,
} from '@canopy/core';
import { Database, type Tx } from './database';
import { PostgresSessionStore } from './postgres-session.store';
import type { NewNode, PositionRecord, StartRunInput } from './session-store.port';
import { CountingDatabase } from './testing/counting-database';

let testDb: TestDatabase;
let db: CountingDatabase;
let store: PostgresSessionStore;

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = new CountingDatabase({ url: testDb.url, poolMax: 8, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 });
  store = new PostgresSessionStore(db);
});

afterAll(async () => {
  await db?.disconnect();
  await testDb?.drop();
});

/** A new tenant; its name defaults to one of its own (tenant names are unique). */
async function newTenant(name?: string): Promise<string> {
  const id = randomUUID();
  name ??= `acme-${id.slice(0, 8)}`;
  await db.withTenant({ tenantId: id }, (tx) => tx.tenant.create({ data: { id, name } }));
  return id;
}

async function newScope(): Promise<Scope> {
  return tenantScope(await newTenant());
}

/** Runs raw SQL in the tenant for test setup (backdating timestamps, reading rows the port does not expose). */
function sql<T>(scope: Scope, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return db.withTenant(scope, fn);
}

async function backdate(scope: Scope, id: string, updatedAt = '2020-01-01T00:00:00Z') {
  await sql(
    scope,
    (tx) => tx.$executeRaw`UPDATE sessions SET updated_at = ${updatedAt}::timestamptz WHERE id = ${id}`,
  );
}

async function startRun(scope: Scope, sessionId: string, extra: Partial<StartRunInput> = {}) {
  const result = await store.startRun(scope, {
    sessionId,
    kind: 'prompt',
    input: { content: 'hi' },
    status: 'running',
    ...extra,
  });
  if (!result.ok) throw new Error(`startRun refused: ${result.reason}`);
  return result;
}

async function count(fn: () => Promise<unknown>): Promise<number> {
  const before = db.statements;
  await fn();
  return db.statements - before;
}

async function countRoundTrips(fn: () => Promise<unknown>): Promise<number> {
  const before = db.roundTrips;
  await fn();
  return db.roundTrips - before;
}

const pos = (path: number[], head: number | null = path[path.length - 1] ?? null): PositionRecord => ({
  path,
  cursors: Object.fromEntries(path.slice(1).map((id, i) => [String(path[i]), id])),
  head,
});

const usage = (inputTokens: number, outputTokens: number, inputCost = 0) =>
  makeUsage({ inputTokens, outputTokens, inputCost });

const node = (
  id: number,
  parentId: number | null,
  text: string,
  u: ReturnType<typeof usage> | null = null,
): NewNode =>
  u
    ? { id, parentId, message: assistantMessage(text, 1_000 + id), usage: u }
    : { id, parentId, message: userMessage(text, 1_000 + id), usage: null };

const OK = { status: 'ok', steer: null, titled: false, queued: false } as const;
const FENCED = { status: 'fenced' } as const;

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (e: unknown) => (e instanceof CanopyException ? e.code : `not a CanopyException: ${String(e)}`),
  );

describe('create / get / exists', () => {
  it('persists a session with an explicit id and reads it back with defaults', async () => {
    const scope = await newScope();
    const tools = [
      { name: 'ask', description: 'ask the user', inputSchema: { type: 'object' }, approval: true },
    ];
    const created = await store.create(scope, {
      id: 'sess-1',
      title: 'T',
      model: 'mock:echo',
      system: 'be brief',
      opts: { temperature: 0.2 },
      tools,
      metadata: { plan: 'pro' },
      userId: 'u1',
      idleShutdownAfterMs: 60_000,
    });
    expect(created).toEqual({
      tenantId: scope.tenantId,
      id: 'sess-1',
      userId: 'u1',
      title: 'T',
      model: 'mock:echo',
      system: 'be brief',
      opts: { temperature: 0.2 },
      tools,
      metadata: { plan: 'pro' },
      status: 'idle',
      path: [],
      cursors: {},
      head: null,
      nextNodeId: 1,
      usage: emptyUsage(),
      idleShutdownAfterMs: 60_000,
      activeRunId: null,
      pinned: false,
      contextMeter: null,
      createdAt: expect.any(Date) as Date,
      updatedAt: expect.any(Date) as Date,
    });
    expect(await store.get(scope, 'sess-1')).toEqual(created);
    expect(await store.exists(scope, 'sess-1')).toBe(true);
    expect(await store.get(scope, 'nope')).toBeNull();
    expect(await store.exists(scope, 'nope')).toBe(false);
  });

  it('generates 22-char URL-safe ids from 16 random bytes when none is given', async () => {
    const scope = await newScope();
    const a = await store.create(scope, { model: 'mock:echo' });
    const b = await store.create(scope, { model: 'mock:echo' });
    for (const s of [a, b]) {
      expect(s.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(Buffer.from(s.id, 'base64url')).toHaveLength(16);
    }
    expect(a.id).not.toBe(b.id);
    expect(a).toMatchObject({ title: null, system: null, opts: {}, tools: [], metadata: {}, userId: null });
  });

  it('answers already_exists for an explicit id used in the tenant, and leaves the first session alone', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 'dup', model: 'first' });
    await expect(store.create(scope, { id: 'dup', model: 'second' })).rejects.toMatchObject({
      code: 'already_exists',
    });
    expect((await store.get(scope, 'dup'))?.model).toBe('first');
    const other = await newScope();
    await expect(store.create(other, { id: 'dup', model: 'x' })).resolves.toMatchObject({ id: 'dup' });
  });

  it('creates a user-scoped session for that user, whatever userId the input names', async () => {
    const t = await newTenant();
    const created = await store.create(tenantScope(t, { userId: 'alice' }), { model: 'm', userId: 'bob' });
    expect(created.userId).toBe('alice');
  });

  it('reads partial or empty stored usage as a complete Usage', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 'u', model: 'm' });
    await sql(
      scope,
      (tx) => tx.$executeRaw`UPDATE sessions SET usage = '{"inputTokens": 2, "outputCost": 0.5}'`,
    );
    expect((await store.get(scope, 'u'))?.usage).toEqual(
      makeUsage({ inputTokens: 2, outputCost: 0.5 }), // totals derived: 2 tokens, 0.5 cost
    );
  });
});

describe('tenant isolation', () => {
  it("gives another tenant's scope nothing to see and nothing to change", async () => {
    const owner = await newScope();
    const stranger = await newScope();
    await store.create(owner, { id: 's', model: 'm', metadata: { k: 'v' } });
    const { run } = await startRun(owner, 's');
    await store.stageSteer(owner, 's', { content: 'steer' });

    expect(await store.get(stranger, 's')).toBeNull();
    expect(await store.exists(stranger, 's')).toBe(false);
    expect(await store.loadTree(stranger, 's')).toBeNull();
    expect((await store.list(stranger, { limit: 100 })).data).toEqual([]);
    expect(await store.getRun(stranger, run.id)).toBeNull();
    expect(await codeOf(store.updateState(stranger, 's', { title: 'x' }))).toBe('not_found');
    expect(await codeOf(store.savePosition(stranger, 's', pos([])))).toBe('not_found');
    expect(
      await store.startRun(stranger, { sessionId: 's', kind: 'prompt', input: {}, status: 'queued' }),
    ).toEqual({ ok: false, reason: 'not_found' });
    expect(await store.loadRun(stranger, 's', run.id)).toBeNull();
    expect(
      await store.commit(stranger, {
        sessionId: 's',
        runId: run.id,
        nodes: [node(1, null, 'x')],
        position: pos([1]),
        nextNodeId: 2,
        usage: emptyUsage(),
        finish: { usage: emptyUsage() },
      }),
    ).toEqual(FENCED);
    expect(await store.pauseRun(stranger, 's', run.id, { a: 1 })).toBe('fenced');
    expect(
      await store.updatePausedRun(stranger, {
        sessionId: 's',
        runId: run.id,
        expectedPending: {},
        pending: {},
        resume: true,
      }),
    ).toEqual({ ok: false, reason: 'not_found' });
    expect(await store.stageSteer(stranger, 's', { content: 'x' })).toBeNull();
    expect(
      await store.endRun(stranger, {
        sessionId: 's',
        runId: run.id,
        status: 'cancelled',
        usage: emptyUsage(),
      }),
    ).toBe('fenced');
    expect(await store.delete(stranger, 's')).toBe(false);

    // Untouched for its owner.
    expect(await store.get(owner, 's')).toMatchObject({ status: 'busy', activeRunId: run.id, nextNodeId: 1 });
    expect(await store.getRun(owner, run.id)).toMatchObject({
      status: 'running',
      attempts: 1,
      steer: { content: 'steer' },
    });
  });
});

describe('user isolation', () => {
  let t: string;
  let alice: Scope;
  let tenant: Scope;

  beforeAll(async () => {
    t = await newTenant();
    tenant = tenantScope(t);
    alice = tenantScope(t, { userId: 'alice' });
    await store.create(tenant, { id: 'a1', model: 'm', userId: 'alice' });
    await store.create(tenant, { id: 'a2', model: 'm', userId: 'alice' });
    await store.create(tenant, { id: 'b1', model: 'm', userId: 'bob' });
    await store.create(tenant, { id: 'n1', model: 'm' });
  });

  it("shows a user only that user's sessions", async () => {
    expect(await store.get(alice, 'a1')).toMatchObject({ id: 'a1' });
    expect(await store.loadTree(alice, 'a1')).toMatchObject({
      session: { id: 'a1', userId: 'alice' },
      nodes: [],
    });
    for (const id of ['b1', 'n1']) {
      expect(await store.get(alice, id)).toBeNull();
      expect(await store.exists(alice, id)).toBe(false);
      expect(await store.loadTree(alice, id)).toBeNull();
    }
    expect((await store.list(alice, { limit: 100 })).data.map((s) => s.id).sort()).toEqual(['a1', 'a2']);
    expect((await store.list(alice, { limit: 100, userId: 'bob' })).data).toEqual([]);
    expect((await store.list(tenant, { limit: 100, userId: 'bob' })).data.map((s) => s.id)).toEqual(['b1']);
    expect((await store.list(tenant, { limit: 100 })).data).toHaveLength(4);
  });

  it("answers as not found when a user touches another user's session or its runs", async () => {
    expect(await codeOf(store.updateState(alice, 'b1', { title: 'x' }))).toBe('not_found');
    expect(await codeOf(store.savePosition(alice, 'n1', pos([])))).toBe('not_found');
    expect(await store.delete(alice, 'b1')).toBe(false);
    expect(
      await store.startRun(alice, { sessionId: 'b1', kind: 'prompt', input: {}, status: 'queued' }),
    ).toEqual({
      ok: false,
      reason: 'not_found',
    });

    const { run } = await startRun(tenant, 'b1');
    expect(await store.stageSteer(tenant, 'b1', { content: 'mine' })).toEqual({ runId: run.id });
    expect(await store.getRun(alice, run.id)).toBeNull();
    expect(await store.stageSteer(alice, 'b1', { content: 'x' })).toBeNull();
    expect(await store.loadRun(alice, 'b1', run.id)).toBeNull();
    expect(await store.pauseRun(alice, 'b1', run.id, {})).toBe('fenced');
    expect(
      await store.commit(alice, {
        sessionId: 'b1',
        runId: run.id,
        nodes: [],
        position: pos([]),
        nextNodeId: 1,
        usage: emptyUsage(),
        finish: { usage: emptyUsage() },
      }),
    ).toEqual(FENCED);
    expect(
      await store.endRun(alice, { sessionId: 'b1', runId: run.id, status: 'cancelled', usage: emptyUsage() }),
    ).toBe('fenced');

    expect(await store.getRun(tenant, run.id)).toMatchObject({
      status: 'running',
      attempts: 1,
      steer: { content: 'mine' },
    });
    expect(await store.getRun(tenantScope(t, { userId: 'bob' }), run.id)).toMatchObject({ id: run.id });
    expect(await store.get(tenant, 'b1')).toMatchObject({ status: 'busy', title: null });
  });
});

describe('getWithQueue', () => {
  it('reads the session and its queued prompts in one transaction, as get and queuedPrompts would apart', async () => {
    const t = await newTenant();
    const tenant = tenantScope(t);
    await store.create(tenant, { id: 's', model: 'm', userId: 'alice' });
    const { run } = await startRun(tenant, 's');
    for (const content of ['first', 'second']) {
      await store.enqueuePrompt(tenant, 's', { id: randomUUID(), mode: 'enqueue', input: { content } });
    }
    let found: Awaited<ReturnType<typeof store.getWithQueue>> = null;
    // BEGIN with the tenant, the queue, the session, COMMIT: four round trips (get and queuedPrompts took six).
    expect(await countRoundTrips(async () => (found = await store.getWithQueue(tenant, 's')))).toBe(4);
    expect(found).toEqual({
      session: await store.get(tenant, 's'),
      queued: await store.queuedPrompts(tenant, 's'),
    });
    expect(found!.session).toMatchObject({ id: 's', status: 'busy', activeRunId: run.id });
    expect(found!.queued.map((q) => q.input.content)).toEqual(['first', 'second']);

    // Another user of the tenant, another tenant, or no such session: nothing.
    expect(await store.getWithQueue(tenantScope(t, { userId: 'bob' }), 's')).toBeNull();
    expect(await store.getWithQueue(await newScope(), 's')).toBeNull();
    expect(await store.getWithQueue(tenant, 'nope')).toBeNull();
    expect(await store.getWithQueue(tenantScope(t, { userId: 'alice' }), 's')).toMatchObject({
      session: { id: 's' },
    });
  });
});

describe('getRunOrQueued', () => {
  it('answers a queued prompt with its place (interrupts first), then its run once started', async () => {
    const t = await newTenant();
    const tenant = tenantScope(t);
    await store.create(tenant, { id: 's', model: 'm', userId: 'alice' });
    const { run } = await startRun(tenant, 's');
    const [e1, e2, i1] = [randomUUID(), randomUUID(), randomUUID()];
    await store.enqueuePrompt(tenant, 's', { id: e1, mode: 'enqueue', input: { content: 'e1' } });
    await store.enqueuePrompt(tenant, 's', { id: e2, mode: 'enqueue', input: { content: 'e2' } });
    await store.enqueuePrompt(tenant, 's', { id: i1, mode: 'interrupt', input: { content: 'i1' } });
    const placeOf = async (id: string) => {
      const found = await store.getRunOrQueued(tenant, id);
      return found && 'queued' in found ? found.queued.position : null;
    };
    expect([await placeOf(i1), await placeOf(e1), await placeOf(e2)]).toEqual([1, 2, 3]);
    expect(await store.getRunOrQueued(tenant, e1)).toEqual({
      queued: {
        id: e1,
        sessionId: 's',
        mode: 'enqueue',
        input: { content: 'e1' },
        actor: { type: 'admin' },
        createdAt: expect.any(Date) as Date,
        position: 2,
      },
    });
    expect(await store.getRunOrQueued(tenant, run.id)).toEqual({ run: await store.getRun(tenant, run.id) });

    // Its run started (and it is still in the queue for a moment): the run.
    await store.endRun(tenant, { sessionId: 's', runId: run.id, status: 'cancelled', usage: emptyUsage() });
    await startRun(tenant, 's', { runId: i1 });
    expect(await store.getRunOrQueued(tenant, i1)).toMatchObject({ run: { id: i1, status: 'running' } });
    await store.dequeuePrompt(tenant, 's', i1);
    expect([await placeOf(e1), await placeOf(e2)]).toEqual([1, 2]);

    // Another user, another tenant, an id no prompt had, one taken out: nothing.
    expect(await store.getRunOrQueued(tenantScope(t, { userId: 'bob' }), e1)).toBeNull();
    expect(await store.getRunOrQueued(tenantScope(t, { userId: 'alice' }), e1)).toMatchObject({
      queued: { id: e1 },
    });
    expect(await store.getRunOrQueued(await newScope(), e1)).toBeNull();
    expect(await store.getRunOrQueued(tenant, randomUUID())).toBeNull();
    expect(await store.getRunOrQueued(tenant, 'not-a-uuid')).toBeNull();
    await store.dequeuePrompt(tenant, 's', e2);
    expect(await store.getRunOrQueued(tenant, e2)).toBeNull();
  });
});

describe('loadTree', () => {
  it('returns the session and every node, sorted by id with usage, in one statement', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 't', model: 'm' });
    const { run } = await startRun(scope, 't');
    // Two branches from root 1: 1 -> 2 -> 3 and 1 -> 4 -> 5.
    const u = usage(3, 5, 0.001);
    expect(
      await store.commit(scope, {
        sessionId: 't',
        runId: run.id,
        nodes: [node(1, null, 'q'), node(2, 1, 'a', u), node(3, 2, 'q2')],
        position: pos([1, 2, 3]),
        nextNodeId: 4,
        usage: u,
      }),
    ).toEqual(OK);
    expect(
      await store.commit(scope, {
        sessionId: 't',
        runId: run.id,
        nodes: [node(4, 1, 'a-bis', u), node(5, 4, 'q-bis')],
        position: pos([1, 4, 5]),
        nextNodeId: 6,
        usage: u,
        finish: { usage: addTwice(u) },
      }),
    ).toEqual(OK);

    let tree: Awaited<ReturnType<PostgresSessionStore['loadTree']>> = null;
    expect(
      await count(async () => {
        tree = await store.loadTree(scope, 't');
      }),
    ).toBe(1);
    expect(tree).not.toBeNull();
    const { session, nodes } = tree!;
    expect(session).toMatchObject({ id: 't', path: [1, 4, 5], head: 5, nextNodeId: 6, status: 'idle' });
    expect(nodes.map((n) => [n.id, n.parentId])).toEqual([
      [1, null],
      [2, 1],
      [3, 2],
      [4, 1],
      [5, 4],
    ]);
    expect(nodes[0]).toEqual({ id: 1, parentId: null, message: userMessage('q', 1_001), usage: null });
    expect(nodes[1]).toEqual({ id: 2, parentId: 1, message: assistantMessage('a', 1_002), usage: u });

    await store.create(scope, { id: 'empty', model: 'm' });
    expect((await store.loadTree(scope, 'empty'))?.nodes).toEqual([]);
    expect(await store.loadTree(scope, 'missing')).toBeNull();
  });
});

function addTwice(u: ReturnType<typeof usage>) {
  return makeUsage({
    inputTokens: u.inputTokens * 2,
    outputTokens: u.outputTokens * 2,
    inputCost: u.inputCost * 2,
  });
}

describe('list', () => {
  it('pages newest first, ties by id descending, across pages with equal updatedAt', async () => {
    const scope = await newScope();
    const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    for (const id of ids) await store.create(scope, { id, model: 'm' });
    // Five share one timestamp; f is older, g newer.
    for (const id of ['a', 'b', 'c', 'd', 'e']) await backdate(scope, id, '2025-06-01T12:00:00.123Z');
    await backdate(scope, 'f', '2025-01-01T00:00:00Z');
    await backdate(scope, 'g', '2025-12-01T00:00:00Z');

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await store.list(scope, { limit: 2, cursor });
      expect(page.data.length).toBeGreaterThan(0);
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data.map((s) => s.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(['g', 'e', 'd', 'c', 'b', 'a', 'f']);
    expect(pages).toBe(4);

    const exact = await store.list(scope, { limit: 7 });
    expect(exact.data).toHaveLength(7);
    expect(exact.nextCursor).toBeNull();
  });

  it('filters on every metadata pair by text, with keys that are arbitrary strings', async () => {
    const scope = await newScope();
    const odd = `it's "quoted" -> {x}; DROP TABLE sessions; --`;
    await store.create(scope, { id: 'm1', model: 'm', metadata: { plan: 'pro', [odd]: 'yes', n: 5 } });
    await store.create(scope, { id: 'm2', model: 'm', metadata: { plan: 'pro', [odd]: 'no' } });
    await store.create(scope, { id: 'm3', model: 'm', metadata: { plan: 'free' } });
    const ids = async (metadata: Record<string, string>) =>
      (await store.list(scope, { limit: 10, metadata })).data.map((s) => s.id).sort();
    expect(await ids({ plan: 'pro' })).toEqual(['m1', 'm2']);
    expect(await ids({ plan: 'pro', [odd]: 'yes' })).toEqual(['m1']);
    expect(await ids({ [odd]: 'no' })).toEqual(['m2']);
    expect(await ids({ n: '5' })).toEqual(['m1']);
    expect(await ids({ plan: 'pro', missing: 'x' })).toEqual([]);
    expect(await ids({})).toEqual(['m1', 'm2', 'm3']);
    expect(await store.exists(scope, 'm3')).toBe(true); // the table survived the key above
  });

  it('keeps the limit within 1..100', async () => {
    const scope = await newScope();
    for (const id of ['x', 'y']) await store.create(scope, { id, model: 'm' });
    expect((await store.list(scope, { limit: 0 })).data).toHaveLength(1);
    expect((await store.list(scope, { limit: 1_000 })).data).toHaveLength(2);
  });

  it('answers bad_request for a cursor it did not make', async () => {
    const scope = await newScope();
    const bad = [
      'not a cursor!',
      Buffer.from('{"x":1}').toString('base64url'),
      Buffer.from('{"updatedAt":"soon","id":"a"}').toString('base64url'),
      Buffer.from('[1,2]').toString('base64url'),
    ];
    for (const cursor of bad) {
      expect(await codeOf(store.list(scope, { limit: 10, cursor }))).toBe('bad_request');
    }
  });
});

describe('updateState', () => {
  it('writes changed fields and bumps updatedAt; an identical patch changes nothing', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm', metadata: { a: 1, b: 2 }, opts: { t: 1 } });
    await backdate(scope, 's');
    const before = (await store.get(scope, 's'))!;

    const same = await store.updateState(scope, 's', {
      title: null,
      model: 'm',
      system: null,
      metadata: { b: 2, a: 1 }, // same jsonb, other key order
      opts: { t: 1 },
      tools: [],
    });
    expect(same.changed).toBe(false);
    expect(same.session.updatedAt).toEqual(before.updatedAt);
    expect((await store.updateState(scope, 's', {})).changed).toBe(false);

    const changed = await store.updateState(scope, 's', { title: 'New', metadata: { a: 1 } });
    expect(changed.changed).toBe(true);
    expect(changed.session).toMatchObject({ title: 'New', metadata: { a: 1 }, model: 'm', opts: { t: 1 } });
    expect(changed.session.updatedAt.getTime()).toBeGreaterThan(before.updatedAt.getTime());
    expect(await store.get(scope, 's')).toEqual(changed.session);

    const cleared = await store.updateState(scope, 's', { title: null });
    expect(cleared).toMatchObject({ changed: true, session: { title: null } });
  });

  it('refuses with session_busy / session_paused when idleOnly, and allows other updates while busy', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    expect(await codeOf(store.updateState(scope, 's', { model: 'x' }, { idleOnly: true }))).toBe(
      'session_busy',
    );
    // Refused even when nothing would change: the command itself is idle-only.
    expect(await codeOf(store.updateState(scope, 's', { model: 'm' }, { idleOnly: true }))).toBe(
      'session_busy',
    );
    expect((await store.updateState(scope, 's', { title: 'while busy' })).changed).toBe(true);

    await store.pauseRun(scope, 's', run.id, { awaiting: ['t1'] });
    expect(await codeOf(store.updateState(scope, 's', { model: 'x' }, { idleOnly: true }))).toBe(
      'session_paused',
    );
    expect((await store.get(scope, 's'))?.model).toBe('m');

    await store.endRun(scope, { sessionId: 's', runId: run.id, status: 'cancelled', usage: emptyUsage() });
    const done = await store.updateState(scope, 's', { model: 'x' }, { idleOnly: true });
    expect(done).toMatchObject({ changed: true, session: { model: 'x' } });
  });

  it('answers not_found for an unknown session', async () => {
    const scope = await newScope();
    expect(await codeOf(store.updateState(scope, 'ghost', { title: 'x' }))).toBe('not_found');
    expect(await codeOf(store.updateState(scope, 'ghost', {}))).toBe('not_found');
  });
});

describe('savePosition', () => {
  it('writes path, cursors and head while idle only', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    await store.commit(scope, {
      sessionId: 's',
      runId: run.id,
      nodes: [node(1, null, 'q'), node(2, 1, 'a', usage(1, 1)), node(3, 1, 'a2', usage(1, 1))],
      position: pos([1, 3]),
      nextNodeId: 4,
      usage: usage(2, 2),
    });
    expect(await codeOf(store.savePosition(scope, 's', pos([1, 2])))).toBe('session_busy');
    await store.pauseRun(scope, 's', run.id, {});
    expect(await codeOf(store.savePosition(scope, 's', pos([1, 2])))).toBe('session_paused');
    await store.endRun(scope, { sessionId: 's', runId: run.id, status: 'cancelled', usage: emptyUsage() });
    await backdate(scope, 's');

    const saved = await store.savePosition(scope, 's', { path: [1, 2], cursors: { '1': 2 }, head: 2 });
    expect(saved).toMatchObject({ path: [1, 2], cursors: { '1': 2 }, head: 2, nextNodeId: 4 });
    expect(saved.updatedAt.getTime()).toBeGreaterThan(new Date('2020-01-02').getTime());
    expect(await store.get(scope, 's')).toEqual(saved);
    expect(await store.savePosition(scope, 's', { path: [], cursors: {}, head: null })).toMatchObject({
      path: [],
      head: null,
    });
    expect(await codeOf(store.savePosition(scope, 'ghost', pos([])))).toBe('not_found');
  });
});

describe('delete', () => {
  it('deletes the session with its nodes and runs', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    await store.commit(scope, {
      sessionId: 's',
      runId: run.id,
      nodes: [node(1, null, 'q')],
      position: pos([1]),
      nextNodeId: 2,
      usage: emptyUsage(),
    });
    expect(await store.delete(scope, 's')).toBe(true);
    expect(await store.delete(scope, 's')).toBe(false);
    expect(await store.getRun(scope, run.id)).toBeNull();
    const left = await sql(scope, (tx) => Promise.all([tx.node.count(), tx.run.count()]));
    expect(left).toEqual([0, 0]);
  });
});

describe('saveContextMeter', () => {
  const meter = { tokens: 1_234, window: 8_192, strategy: 'truncate' as const, summarizedThrough: null };

  it('keeps the meter of the head it was counted at, without touching updatedAt; a moved head keeps the newer one', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    await backdate(scope, 's');
    expect(await store.saveContextMeter(scope, 's', null, meter)).toBe(true);
    const saved = (await store.get(scope, 's'))!;
    expect(saved.contextMeter).toEqual(meter);
    expect(saved.updatedAt.toISOString()).toBe('2020-01-01T00:00:00.000Z');
    // Every read of the session carries it: a list, the tree, a run's start.
    expect((await store.list(scope, { limit: 10 })).data[0]!.contextMeter).toEqual(meter);
    expect((await store.loadTree(scope, 's'))!.session.contextMeter).toEqual(meter);
    const { run, session } = await startRun(scope, 's');
    expect(session.contextMeter).toEqual(meter);
    await store.commit(scope, {
      sessionId: 's',
      runId: run.id,
      nodes: [node(1, null, 'q')],
      position: pos([1]),
      nextNodeId: 2,
      usage: emptyUsage(),
      finish: { usage: emptyUsage() },
    });
    // Counted at the head before the commit: too late, another meter is due.
    expect(await store.saveContextMeter(scope, 's', null, { ...meter, tokens: 1 })).toBe(false);
    const next = { ...meter, tokens: 1_300, window: null, summarizedThrough: 1 };
    expect(await store.saveContextMeter(scope, 's', 1, next)).toBe(true);
    expect((await store.get(scope, 's'))!.contextMeter).toEqual(next);
  });

  it('writes nothing for another tenant or another user, and reads a malformed meter as none', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm', userId: 'alice' });
    expect(await store.saveContextMeter(await newScope(), 's', null, meter)).toBe(false);
    expect(await store.saveContextMeter({ ...scope, userId: 'bob' }, 's', null, meter)).toBe(false);
    expect((await store.get(scope, 's'))!.contextMeter).toBeNull();
    expect(await store.saveContextMeter({ ...scope, userId: 'alice' }, 's', null, meter)).toBe(true);
    await sql(
      scope,
      (tx) => tx.$executeRaw`UPDATE sessions SET context_meter = '{"tokens": "many"}'::jsonb WHERE id = 's'`,
    );
    expect((await store.get(scope, 's'))!.contextMeter).toBeNull();
  });
});

describe('startRun', () => {
  it('claims an idle session for a new running run, with position and rollback', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const rollback = pos([]);
    const result = await store.startRun(scope, {
      sessionId: 's',
      kind: 'branch',
      input: { nodeId: null },
      status: 'running',
      position: { path: [], cursors: {}, head: null },
      rollback,
    });
    if (!result.ok) throw new Error('expected ok');
    const { run, session } = result;
    expect(run.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(run).toEqual({
      id: run.id,
      tenantId: scope.tenantId,
      sessionId: 's',
      kind: 'branch',
      status: 'running',
      input: { nodeId: null },
      pending: null,
      steer: null,
      rollback,
      error: null,
      usage: emptyUsage(),
      attempts: 1,
      actor: { type: 'admin' }, // a scope made in code, neither a key's nor a user's
      createdAt: expect.any(Date) as Date,
      startedAt: expect.any(Date) as Date,
      finishedAt: null,
    });
    expect(session).toMatchObject({ status: 'busy', activeRunId: run.id });
    expect(await store.get(scope, 's')).toEqual(session);
    expect(await store.getRun(scope, run.id)).toEqual(run);
    expect(await store.getRun(scope, randomUUID())).toBeNull();
    expect(await store.getRun(scope, 'not-a-uuid')).toBeNull();
  });

  it('queues a run without starting it, moving the position when given, in one round trip', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    let started: Awaited<ReturnType<typeof startRun>> | undefined;
    expect(
      await countRoundTrips(async () => {
        started = await startRun(scope, 's', { status: 'queued', position: pos([]) });
      }),
    ).toBe(1);
    const { run, session } = started!;
    expect(run).toMatchObject({ status: 'queued', attempts: 0, startedAt: null, rollback: null });
    expect(session).toMatchObject({ path: [], head: null, status: 'busy' });
  });

  it('refuses a busy, paused or unknown session', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    const again = () =>
      store.startRun(scope, { sessionId: 's', kind: 'prompt', input: {}, status: 'queued' });
    expect(await again()).toEqual({ ok: false, reason: 'busy' });
    await store.pauseRun(scope, 's', run.id, {});
    expect(await again()).toEqual({ ok: false, reason: 'paused' });
    expect(
      await store.startRun(scope, { sessionId: 'x', kind: 'prompt', input: {}, status: 'queued' }),
    ).toEqual({
      ok: false,
      reason: 'not_found',
    });
    expect((await store.get(scope, 's'))?.activeRunId).toBe(run.id);
  });

  it('lets exactly one of five concurrent starts win', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 'race', model: 'm' });
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        store.startRun(scope, { sessionId: 'race', kind: 'prompt', input: { i }, status: 'running' }),
      ),
    );
    const winners = results.filter((r) => r.ok);
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => !r.ok)).toEqual(Array(4).fill({ ok: false, reason: 'busy' }));
    const runs = await sql(scope, (tx) => tx.run.findMany({ select: { id: true } }));
    expect(runs.map((r) => r.id)).toEqual([winners[0]!.ok ? winners[0]!.run.id : '']);
    expect((await store.get(scope, 'race'))?.activeRunId).toBe(runs[0]!.id);
  });
});

describe('startRun with a limit of runs in flight per tenant', () => {
  it('refuses rate_limited at the limit of busy sessions, counts every busy session of the tenant only', async () => {
    const scope = await newScope();
    const other = await newScope();
    for (const id of ['a', 'b', 'c']) await store.create(scope, { id, model: 'm' });
    await store.create(other, { id: 'a', model: 'm' });
    const first = await startRun(scope, 'a', { maxBusy: 2 });
    expect(first.busy).toBe(0); // the count made for the limit is answered: the tenant's other busy sessions
    expect((await startRun(scope, 'b', { maxBusy: 2 })).busy).toBe(1);
    expect(await startRun(scope, 'b', { maxBusy: 2 }).catch((e: Error) => e.message)).toBe(
      'startRun refused: busy',
    );
    const refused = await store.startRun(scope, {
      sessionId: 'c',
      kind: 'prompt',
      input: {},
      status: 'queued',
      maxBusy: 2,
    });
    expect(refused).toEqual({ ok: false, reason: 'rate_limited', busy: 2 });
    const uncounted = await store.startRun(scope, {
      sessionId: 'a',
      kind: 'prompt',
      input: {},
      status: 'queued',
    });
    expect(uncounted).toEqual({ ok: false, reason: 'busy' }); // no limit given: nothing counted, none answered
    expect((await store.get(scope, 'c'))?.status).toBe('idle'); // nothing claimed, no run written
    await startRun(other, 'a', { maxBusy: 1 }); // another tenant has its own count
    await store.endRun(scope, {
      sessionId: 'a',
      runId: first.run.id,
      status: 'cancelled',
      usage: emptyUsage(),
    });
    expect((await startRun(scope, 'c', { maxBusy: 2 })).busy).toBe(1);
    await startRun(other, 'a', { maxBusy: 1 }).then(
      () => {
        throw new Error('expected a refusal');
      },
      (err: Error) => expect(err.message).toBe('startRun refused: busy'),
    );
  });
});

describe('startRun racing an end', () => {
  it('either starts the next run or is refused busy, never both and never stuck', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    let { run } = await startRun(scope, 's');
    for (let i = 0; i < 30; i++) {
      const [ended, started] = await Promise.all([
        store.endRun(scope, { sessionId: 's', runId: run.id, status: 'cancelled', usage: emptyUsage() }),
        store.startRun(scope, { sessionId: 's', kind: 'prompt', input: { i }, status: 'running' }),
      ]);
      expect(ended).toBe('ok');
      const session = (await store.get(scope, 's'))!;
      if (started.ok) {
        expect(session).toMatchObject({ status: 'busy', activeRunId: started.run.id });
        run = started.run;
      } else {
        expect(started).toEqual({ ok: false, reason: 'busy' });
        expect(session).toMatchObject({ status: 'idle', activeRunId: null });
        run = (await startRun(scope, 's')).run;
      }
    }
  });
});

describe('loadRun', () => {
  it('takes a queued run and answers the session, the run and the active path root first, in one round trip', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run: first } = await startRun(scope, 's');
    // Two branches from root 1: 1 -> 2 -> 3 and 1 -> 4 -> 5; the active path is the second.
    const u = usage(3, 5, 0.001);
    await store.commit(scope, {
      sessionId: 's',
      runId: first.id,
      nodes: [
        node(1, null, 'q'),
        node(2, 1, 'a', u),
        node(3, 2, 'q2'),
        node(4, 1, 'a-bis', u),
        node(5, 4, 'q3'),
      ],
      position: pos([1, 4, 5]),
      nextNodeId: 6,
      usage: addTwice(u),
      finish: { usage: addTwice(u) },
    });
    const { run } = await startRun(scope, 's', { status: 'queued' });

    let context: Awaited<ReturnType<PostgresSessionStore['loadRun']>> = null;
    expect(
      await countRoundTrips(async () => {
        context = await store.loadRun(scope, 's', run.id);
      }),
    ).toBe(1);
    expect(context).not.toBeNull();
    const { session, run: taken, pathNodes } = context!;
    expect(session).toEqual(await store.get(scope, 's'));
    expect(session).toMatchObject({ status: 'busy', activeRunId: run.id, path: [1, 4, 5], nextNodeId: 6 });
    expect(taken).toEqual({
      ...run,
      status: 'running',
      attempts: 1,
      startedAt: expect.any(Date) as Date,
    });
    expect(await store.getRun(scope, run.id)).toEqual(taken);
    expect(pathNodes).toEqual([
      { id: 1, parentId: null, message: userMessage('q', 1_001), usage: null },
      { id: 4, parentId: 1, message: assistantMessage('a-bis', 1_004), usage: u },
      { id: 5, parentId: 4, message: userMessage('q3', 1_005), usage: null },
    ]);
  });

  it('counts one more attempt when a running run is taken over, keeping its start time', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's', { status: 'queued' });
    const first = (await store.loadRun(scope, 's', run.id))!;
    expect(first.run).toMatchObject({ status: 'running', attempts: 1 });
    expect(first.pathNodes).toEqual([]);
    const second = (await store.loadRun(scope, 's', run.id))!;
    expect(second.run).toMatchObject({ status: 'running', attempts: 2, startedAt: first.run.startedAt });
    // A run started running (inline) counts its first attempt at start: taking it is the second.
    const other = await newScope();
    await store.create(other, { id: 's', model: 'm' });
    const { run: inline } = await startRun(other, 's');
    expect((await store.loadRun(other, 's', inline.id))?.run).toMatchObject({ attempts: 2 });
  });

  it('answers null, changing nothing, when the run is not the active one or has nothing to execute', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's', { status: 'queued' });
    expect(await store.loadRun(scope, 's', randomUUID())).toBeNull();
    expect(await store.loadRun(scope, 's', 'not-a-uuid')).toBeNull();
    expect(await store.loadRun(scope, 'ghost', run.id)).toBeNull();
    expect(await store.getRun(scope, run.id)).toMatchObject({
      status: 'queued',
      attempts: 0,
      startedAt: null,
    });

    // Paused: nothing to execute until a decision resumes it.
    await store.loadRun(scope, 's', run.id);
    await store.pauseRun(scope, 's', run.id, { awaiting: ['t1'] });
    expect(await store.loadRun(scope, 's', run.id)).toBeNull();
    expect(await store.getRun(scope, run.id)).toMatchObject({ status: 'paused', attempts: 1 });
    await store.updatePausedRun(scope, {
      sessionId: 's',
      runId: run.id,
      expectedPending: { awaiting: ['t1'] },
      pending: { awaiting: [] },
      resume: true,
    });
    expect((await store.loadRun(scope, 's', run.id))?.run).toMatchObject({ status: 'running', attempts: 2 });

    // Ended, then superseded by a newer run: the old one is never taken again.
    await store.endRun(scope, { sessionId: 's', runId: run.id, status: 'cancelled', usage: emptyUsage() });
    expect(await store.loadRun(scope, 's', run.id)).toBeNull();
    const { run: next } = await startRun(scope, 's', { status: 'queued' });
    expect(await store.loadRun(scope, 's', run.id)).toBeNull();
    expect(await store.getRun(scope, run.id)).toMatchObject({ status: 'cancelled', attempts: 2 });
    expect(await store.getRun(scope, next.id)).toMatchObject({ status: 'queued', attempts: 0 });
  });

  it("hides another user's runs and another tenant's", async () => {
    const t = await newTenant();
    const tenant = tenantScope(t);
    await store.create(tenant, { id: 'b', model: 'm', userId: 'bob' });
    const { run } = await startRun(tenant, 'b', { status: 'queued' });
    expect(await store.loadRun(tenantScope(t, { userId: 'alice' }), 'b', run.id)).toBeNull();
    expect(await store.loadRun(await newScope(), 'b', run.id)).toBeNull();
    expect(await store.getRun(tenant, run.id)).toMatchObject({ status: 'queued', attempts: 0 });
    expect((await store.loadRun(tenantScope(t, { userId: 'bob' }), 'b', run.id))?.run).toMatchObject({
      status: 'running',
      attempts: 1,
    });
  });
});

describe('commit', () => {
  it('sends a path that keeps a prefix of the stored one as its cut and the ids after it, whole when stale', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    const base = {
      sessionId: 's',
      runId: run.id,
      nodes: [node(1, null, 'q'), node(2, 1, 'a'), node(3, 2, 'q2')],
      position: pos([1, 2, 3]),
      nextNodeId: 4,
      usage: emptyUsage(),
    };
    // Nothing stored to keep: the path goes whole.
    expect(await store.commit(scope, { ...base, storedPath: [] })).toEqual(OK);
    // A branch from 2 keeps [1, 2] of [1, 2, 3].
    const branch = { ...base, nodes: [node(4, 2, 'q2-bis'), node(5, 4, 'a-bis')], nextNodeId: 6 };
    expect(
      await store.commit(scope, { ...branch, position: pos([1, 2, 4, 5]), storedPath: [1, 2, 3] }),
    ).toEqual(OK);
    expect(await store.get(scope, 's')).toMatchObject({ path: [1, 2, 4, 5], head: 5 });
    // A caller whose view of the stored path is stale (here: too short) still leaves the position it asked for.
    const stale = { ...base, nodes: [node(6, 5, 'q3')], position: pos([1, 2, 4, 5, 6]), nextNodeId: 7 };
    expect(await store.commit(scope, { ...stale, storedPath: [1, 2, 4] })).toEqual(OK);
    expect(await store.get(scope, 's')).toMatchObject({ path: [1, 2, 4, 5, 6], head: 6, nextNodeId: 7 });
    // And one that takes the stored path for another branch of the same length ([1, 2, 3, …] for [1, 2, 4, …]).
    const differs = { ...base, nodes: [node(7, 3, 'a2')], position: pos([1, 2, 3, 7]), nextNodeId: 8 };
    expect(await store.commit(scope, { ...differs, storedPath: [1, 2, 3, 5, 6] })).toEqual(OK);
    expect(await store.get(scope, 's')).toMatchObject({ path: [1, 2, 3, 7], head: 7, nextNodeId: 8 });
    // The run still fenced: another run's commit is refused whatever form its path takes.
    expect(
      await store.commit(scope, { ...differs, runId: randomUUID(), nodes: [], storedPath: [1, 2, 3, 7] }),
    ).toEqual({ status: 'fenced' });
  });

  it('titles an untitled session with the commit that ends its run; a title set meanwhile wins', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const first = (await startRun(scope, 's')).run;
    // A commit that does not end the run titles nothing.
    const step = {
      sessionId: 's',
      runId: first.id,
      nodes: [node(1, null, 'q')],
      position: pos([1]),
      nextNodeId: 2,
      usage: emptyUsage(),
      title: 'Not yet',
    };
    expect(await store.commit(scope, step)).toEqual(OK);
    expect((await store.get(scope, 's'))?.title).toBeNull();
    const end = {
      ...step,
      nodes: [node(2, 1, 'a')],
      position: pos([1, 2]),
      nextNodeId: 3,
      finish: { usage: emptyUsage() },
      title: 'Planning a trip',
    };
    expect(await store.commit(scope, end)).toEqual({ ...OK, titled: true });
    expect((await store.get(scope, 's'))?.title).toBe('Planning a trip');

    // Renamed while the next run is in flight: its end keeps the new name.
    await store.create(scope, { id: 'r', model: 'm' });
    const second = (await startRun(scope, 'r')).run;
    await store.updateState(scope, 'r', { title: 'Chosen by the user' });
    const ended = await store.commit(scope, {
      ...end,
      sessionId: 'r',
      runId: second.id,
      nodes: [node(1, null, 'q')],
      position: pos([1]),
      nextNodeId: 2,
    });
    expect(ended).toEqual(OK);
    expect((await store.get(scope, 'r'))?.title).toBe('Chosen by the user');
  });

  it('says whether prompts wait in the queue when it ends the run (and only then)', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    const step = {
      sessionId: 's',
      runId: run.id,
      nodes: [node(1, null, 'q')],
      position: pos([1]),
      nextNodeId: 2,
      usage: emptyUsage(),
    };
    expect(
      await store.enqueuePrompt(scope, 's', {
        id: randomUUID(),
        mode: 'enqueue',
        input: { content: 'next' },
      }),
    ).toBe(true);
    // A commit that does not end the run: the run goes on, nothing to start.
    expect(await store.commit(scope, step)).toEqual(OK);
    const end = {
      ...step,
      nodes: [node(2, 1, 'a')],
      position: pos([1, 2]),
      nextNodeId: 3,
      finish: { usage: emptyUsage() },
    };
    expect(await store.commit(scope, end)).toEqual({ ...OK, queued: true });

    // An empty queue (another session's prompts do not count).
    await store.create(scope, { id: 't', model: 'm' });
    const other = (await startRun(scope, 't')).run;
    expect(
      await store.commit(scope, {
        ...end,
        sessionId: 't',
        runId: other.id,
        nodes: [node(1, null, 'q')],
        position: pos([1]),
        nextNodeId: 2,
      }),
    ).toEqual(OK);
  });

  it('appends nodes, moves the position, sums usage and clears the rollback, in one round trip', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's', { kind: 'branch', rollback: pos([]) });
    const u1 = usage(10, 20, 0.01);
    let result: unknown;
    const roundTrips = await countRoundTrips(async () => {
      result = await store.commit(scope, {
        sessionId: 's',
        runId: run.id,
        nodes: [node(1, null, 'q'), node(2, 1, 'a', u1)],
        position: pos([1, 2]),
        nextNodeId: 3,
        usage: u1,
      });
    });
    expect(result).toEqual(OK);
    expect(roundTrips).toBe(1);

    const after = (await store.get(scope, 's'))!;
    expect(after).toMatchObject({
      path: [1, 2],
      cursors: { '1': 2 },
      head: 2,
      nextNodeId: 3,
      usage: u1,
      status: 'busy',
      activeRunId: run.id,
    });
    expect(await store.getRun(scope, run.id)).toMatchObject({ rollback: null, status: 'running' });
    const rows = await sql(scope, (tx) =>
      tx.node.findMany({
        orderBy: { id: 'asc' },
        select: { id: true, parentId: true, role: true, usage: true },
      }),
    );
    expect(rows).toEqual([
      { id: 1, parentId: null, role: 'user', usage: null },
      { id: 2, parentId: 1, role: 'assistant', usage: u1 },
    ]);

    // A commit that only moves the position, then the last one with finish.
    expect(
      await store.commit(scope, {
        sessionId: 's',
        runId: run.id,
        nodes: [],
        position: pos([1]),
        nextNodeId: 3,
        usage: emptyUsage(),
      }),
    ).toEqual(OK);
    const u2 = usage(1, 2, 0.02);
    const total = makeUsage({ inputTokens: 11, outputTokens: 22, inputCost: 0.01 + 0.02 });
    expect(
      await store.commit(scope, {
        sessionId: 's',
        runId: run.id,
        nodes: [node(3, 1, 'a-bis', u2)],
        position: pos([1, 3]),
        nextNodeId: 4,
        usage: u2,
        finish: { usage: total },
      }),
    ).toEqual(OK);
    const finished = (await store.get(scope, 's'))!;
    expect(finished).toMatchObject({
      status: 'idle',
      activeRunId: null,
      path: [1, 3],
      head: 3,
      nextNodeId: 4,
    });
    expect(finished.usage.inputTokens).toBe(11);
    expect(finished.usage.outputTokens).toBe(22);
    expect(finished.usage.totalTokens).toBe(33);
    expect(finished.usage.inputCost).toBeCloseTo(0.03, 10);
    expect(await store.getRun(scope, run.id)).toMatchObject({
      status: 'completed',
      usage: total,
      finishedAt: expect.any(Date) as Date,
    });
  });

  it('records on the run the head each commit leaves, read back by the id its client gave the run', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    await store.create(scope, { id: 'other', model: 'm' });
    const { run } = await startRun(scope, 's');
    expect(await store.setClientRunId(scope, 's', run.id, 'client-1')).toBe(true);
    // Not committed yet: nothing to branch after.
    expect(await store.runByClientId(scope, 's', 'client-1')).toEqual({ runId: run.id, headNode: null });
    const commit = (nodes: NewNode[], path: number[], finish = false) =>
      store.commit(scope, {
        sessionId: 's',
        runId: run.id,
        nodes,
        position: pos(path),
        nextNodeId: path[path.length - 1]! + 1,
        usage: emptyUsage(),
        ...(finish ? { finish: { usage: emptyUsage() } } : {}),
      });
    // Still one round trip: the head goes into the commit's own UPDATE of the run.
    expect(
      await countRoundTrips(() => commit([node(1, null, 'q'), node(2, 1, 'a', usage(1, 1))], [1, 2])),
    ).toBe(1);
    expect(await store.runByClientId(scope, 's', 'client-1')).toEqual({ runId: run.id, headNode: 2 });
    expect(await commit([node(3, 2, 'q2'), node(4, 3, 'a2', usage(1, 1))], [1, 2, 3, 4], true)).toEqual(OK);
    expect(await store.runByClientId(scope, 's', 'client-1')).toEqual({ runId: run.id, headNode: 4 });

    // A later run given the same client id is the one found; a run continued by a later input takes its id.
    const { run: second } = await startRun(scope, 's');
    expect(await store.setClientRunId(scope, 's', second.id, 'client-1')).toBe(true);
    expect((await store.runByClientId(scope, 's', 'client-1'))?.runId).toBe(second.id);
    expect(await store.setClientRunId(scope, 's', second.id, 'client-2')).toBe(true);
    expect((await store.runByClientId(scope, 's', 'client-2'))?.runId).toBe(second.id);
    expect((await store.runByClientId(scope, 's', 'client-1'))?.runId).toBe(run.id);

    // Never another session's, tenant's or user's run.
    expect(await store.runByClientId(scope, 'other', 'client-2')).toBeNull();
    expect(await store.setClientRunId(scope, 'other', second.id, 'client-3')).toBe(false);
    const stranger = await newScope();
    expect(await store.runByClientId(stranger, 's', 'client-2')).toBeNull();
    expect(await store.setClientRunId(stranger, 's', second.id, 'client-3')).toBe(false);
    const mallory = tenantScope(scope.tenantId, { userId: 'mallory' });
    expect(await store.runByClientId(mallory, 's', 'client-2')).toBeNull();
    expect(await store.setClientRunId(mallory, 's', second.id, 'client-3')).toBe(false);
    expect(await store.setClientRunId(scope, 's', 'not-a-uuid', 'client-3')).toBe(false);
    expect(await store.runByClientId(scope, 's', 'client-3')).toBeNull();
  });

  it('sums usage field by field exactly as addUsage does, reading a partial stored total as makeUsage does', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    // Written by hand or an older version: fields missing, one not a number; totals derived from the parts.
    await sql(
      scope,
      (tx) =>
        tx.$executeRaw`UPDATE sessions SET usage = '{"inputTokens": 2, "outputCost": 0.1, "cacheReadCost": "x"}'`,
    );
    const stored = (await store.get(scope, 's'))!.usage;
    const u = makeUsage({ inputTokens: 1e15 + 1, outputCost: 0.2, cacheReadCost: 1 / 3, totalCost: 7.7 });
    await store.commit(scope, {
      sessionId: 's',
      runId: run.id,
      nodes: [],
      position: pos([]),
      nextNodeId: 1,
      usage: u,
      finish: { usage: { inputTokens: 3 } as ReturnType<typeof makeUsage> },
    });
    // toEqual compares numbers with Object.is: 0.1 + 0.2 must be 0.30000000000000004 here too.
    expect((await store.get(scope, 's'))?.usage).toEqual(addUsage(stored, u));
    expect((await store.getRun(scope, run.id))?.usage).toEqual(makeUsage({ inputTokens: 3 }));
  });

  it('sums exactly even on a database whose default prints floats rounded (the pool pins the setting)', async () => {
    const admin = new Client({ connectionString: adminUrl().replace(/\/[^/]*$/, `/${testDb.name}`) });
    await admin.connect();
    await admin.query(`ALTER DATABASE ${testDb.name} SET extra_float_digits = 0`);
    const rounding = new Database({ url: testDb.url, poolMax: 1, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 });
    try {
      const other = new PostgresSessionStore(rounding);
      const scope = await newScope();
      await other.create(scope, { id: 's', model: 'm' });
      const run = await other.startRun(scope, {
        sessionId: 's',
        kind: 'prompt',
        input: { content: 'hi' },
        status: 'running',
      });
      if (!run.ok) throw new Error(run.reason);
      // What a connection of this database prints without the pool's setting: 15 significant digits.
      const raw = await admin.query<{ v: string }>(
        `SET extra_float_digits = 0; SELECT (0.1::float8 + 0.2::float8)::text AS v`,
      );
      expect((raw as unknown as Array<{ rows: Array<{ v: string }> }>)[1]!.rows[0]!.v).toBe('0.3');
      const a = makeUsage({ outputCost: 0.1 });
      const b = makeUsage({ outputCost: 0.2, cacheReadCost: 1 / 3 });
      for (const usage of [a, b]) {
        const step = {
          sessionId: 's',
          runId: run.run.id,
          nodes: [],
          position: pos([]),
          nextNodeId: 1,
          usage,
        };
        expect(await other.commit(scope, step)).toEqual(OK);
      }
      expect((await other.get(scope, 's'))?.usage).toEqual(addUsage(a, b));
      expect((await other.get(scope, 's'))?.usage.outputCost).toBe(0.30000000000000004);
    } finally {
      await rounding.disconnect();
      await admin.query(`ALTER DATABASE ${testDb.name} RESET extra_float_digits`);
      await admin.end();
    }
  });

  it('answers unavailable when the session stays locked past the deadline, writing nothing', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    const quick = new Database({ url: testDb.url, poolMax: 1, txMaxWaitMs: 5_000, txTimeoutMs: 200 });
    try {
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holding = db.withTenantSql(scope, async (tx) => {
        await tx.query(`SELECT 1 FROM sessions WHERE id = 's' FOR UPDATE`);
        locked();
        await tx.query('SELECT pg_sleep(0.8)');
      });
      await isLocked;
      const started = performance.now();
      const commit = new PostgresSessionStore(quick).commit(scope, {
        sessionId: 's',
        runId: run.id,
        nodes: [node(1, null, 'q')],
        position: pos([1]),
        nextNodeId: 2,
        usage: emptyUsage(),
      });
      expect(await codeOf(commit)).toBe('unavailable');
      expect(performance.now() - started).toBeLessThan(700);
      await holding;
      expect(await store.get(scope, 's')).toMatchObject({ nextNodeId: 1, path: [] });
    } finally {
      await quick.disconnect();
    }
  });

  it('is fenced once the run is no longer the active one, and then writes nothing', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run: old } = await startRun(scope, 's');
    await store.endRun(scope, { sessionId: 's', runId: old.id, status: 'cancelled', usage: emptyUsage() });
    const { run: current } = await startRun(scope, 's');
    const before = (await store.get(scope, 's'))!;
    const stale = {
      sessionId: 's',
      runId: old.id,
      nodes: [node(1, null, 'late')],
      position: pos([1]),
      nextNodeId: 2,
      usage: usage(5, 5),
      finish: { usage: usage(5, 5) },
    };
    expect(await store.commit(scope, stale)).toEqual(FENCED);
    expect(await store.commit(scope, { ...stale, runId: 'not-a-uuid' })).toEqual(FENCED);
    expect(await store.get(scope, 's')).toEqual(before);
    expect(await sql(scope, (tx) => tx.node.count())).toBe(0);
    expect(await store.getRun(scope, old.id)).toMatchObject({ status: 'cancelled' });
    expect(before).toMatchObject({ status: 'busy', activeRunId: current.id });
  });

  it('clears the pending state of a resumed run', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    const decided = { toolUses: [{ id: 't1' }], decisions: { t1: 'execute' } };
    await store.pauseRun(scope, 's', run.id, { toolUses: [{ id: 't1' }], decisions: {} });
    await store.updatePausedRun(scope, {
      sessionId: 's',
      runId: run.id,
      expectedPending: { toolUses: [{ id: 't1' }], decisions: {} },
      pending: decided,
      resume: true,
    });
    expect(await store.getRun(scope, run.id)).toMatchObject({ status: 'running', pending: decided });
    const result = await store.commit(scope, {
      sessionId: 's',
      runId: run.id,
      nodes: [node(1, null, 'tool result')],
      position: pos([1]),
      nextNodeId: 2,
      usage: emptyUsage(),
    });
    expect(result).toEqual(OK);
    expect(await store.getRun(scope, run.id)).toMatchObject({ status: 'running', pending: null });
  });

  it('folds a steered prompt into a finishing commit: applied, not finished, the steer handed back once', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    const u1 = usage(1, 2, 0.01);
    expect(await store.stageSteer(scope, 's', { content: 'first' })).toEqual({ runId: run.id });
    expect(await store.stageSteer(scope, 's', { content: 'then this' })).toEqual({ runId: run.id });

    // A commit that does not finish leaves the steer staged for the last one.
    expect(
      await store.commit(scope, {
        sessionId: 's',
        runId: run.id,
        nodes: [node(1, null, 'q')],
        position: pos([1]),
        nextNodeId: 2,
        usage: emptyUsage(),
      }),
    ).toEqual(OK);
    expect((await store.getRun(scope, run.id))?.steer).toEqual({
      content: 'then this',
      actor: { type: 'admin' },
    });

    let result: unknown;
    const roundTrips = await countRoundTrips(async () => {
      result = await store.commit(scope, {
        sessionId: 's',
        runId: run.id,
        nodes: [node(2, 1, 'a', u1)],
        position: pos([1, 2]),
        nextNodeId: 3,
        usage: u1,
        finish: { usage: u1 },
      });
    });
    expect(roundTrips).toBe(1);
    // Handed back with who staged it (a scope made in code acts as the admin).
    expect(result).toEqual({
      status: 'ok',
      steer: { content: 'then this', actor: { type: 'admin' } },
      titled: false,
      queued: false,
    });
    // The turn is committed, the run goes on: the session stays busy and owned, the run running and unfinished.
    expect(await store.get(scope, 's')).toMatchObject({
      status: 'busy',
      activeRunId: run.id,
      path: [1, 2],
      head: 2,
      nextNodeId: 3,
      usage: u1,
    });
    // The run records its usage so far (the finished turn's, settled into the usage rollup now).
    expect(await store.getRun(scope, run.id)).toMatchObject({
      status: 'running',
      steer: null,
      usage: u1,
      finishedAt: null,
      // What a takeover would re-run: the steered prompt, not the original one.
      input: { content: 'then this' },
    });
    expect((await store.loadTree(scope, 's'))?.nodes.map((n) => n.id)).toEqual([1, 2]);

    // The steered prompt's turn, then the finishing commit with nothing staged ends the run.
    const u2 = usage(4, 8, 0.02);
    const total = makeUsage({ inputTokens: 5, outputTokens: 10, inputCost: 0.03 });
    expect(
      await store.commit(scope, {
        sessionId: 's',
        runId: run.id,
        nodes: [node(3, 2, 'then this'), node(4, 3, 'a2', u2)],
        position: pos([1, 2, 3, 4]),
        nextNodeId: 5,
        usage: u2,
        finish: { usage: total },
      }),
    ).toEqual(OK);
    expect(await store.get(scope, 's')).toMatchObject({
      status: 'idle',
      activeRunId: null,
      path: [1, 2, 3, 4],
    });
    expect(await store.getRun(scope, run.id)).toMatchObject({
      status: 'completed',
      steer: null,
      usage: total,
      finishedAt: expect.any(Date) as Date,
    });
  });

  it('never loses a steer racing a finishing commit: staged before it is handed back, after it is refused', async () => {
    const scope = await newScope();
    for (let i = 0; i < 20; i++) {
      const id = `race-${i}`;
      await store.create(scope, { id, model: 'm' });
      const { run } = await startRun(scope, id);
      const [staged, committed] = await Promise.all([
        store.stageSteer(scope, id, { content: `steer ${i}` }),
        store.commit(scope, {
          sessionId: id,
          runId: run.id,
          nodes: [],
          position: pos([]),
          nextNodeId: 1,
          usage: emptyUsage(),
          finish: { usage: emptyUsage() },
        }),
      ]);
      const session = (await store.get(scope, id))!;
      if (staged) {
        expect(committed).toEqual({
          status: 'ok',
          steer: { content: `steer ${i}`, actor: { type: 'admin' } },
          titled: false,
          queued: false,
        });
        expect(session).toMatchObject({ status: 'busy', activeRunId: run.id });
      } else {
        expect(committed).toEqual(OK);
        expect(session).toMatchObject({ status: 'idle', activeRunId: null });
      }
      expect((await store.getRun(scope, run.id))?.steer).toBeNull();
    }
  });
});

describe('pause and resume', () => {
  it('pauses, refuses a stale decision, records one, then resumes', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    const awaiting = { toolUses: [{ id: 't1' }, { id: 't2' }], decisions: {} };
    expect(await store.pauseRun(scope, 's', run.id, awaiting)).toBe('ok');
    expect(await store.get(scope, 's')).toMatchObject({ status: 'paused', activeRunId: run.id });
    expect(await store.getRun(scope, run.id)).toMatchObject({ status: 'paused', pending: awaiting });

    const one = { ...awaiting, decisions: { t1: 'execute' } };
    const recorded = await store.updatePausedRun(scope, {
      sessionId: 's',
      runId: run.id,
      expectedPending: { decisions: {}, toolUses: [{ id: 't1' }, { id: 't2' }] }, // jsonb equality: key order free
      pending: one,
      resume: false,
    });
    expect(recorded).toMatchObject({
      ok: true,
      run: { status: 'paused', pending: one },
      session: { status: 'paused' },
    });

    // Computed from the state before t1's decision: refused, nothing written.
    const stale = await store.updatePausedRun(scope, {
      sessionId: 's',
      runId: run.id,
      expectedPending: awaiting,
      pending: { ...awaiting, decisions: { t2: 'reject' } },
      resume: true,
    });
    expect(stale).toEqual({ ok: false, reason: 'conflict' });
    expect(await store.getRun(scope, run.id)).toMatchObject({ status: 'paused', pending: one });

    const both = { ...awaiting, decisions: { t1: 'execute', t2: 'reject' } };
    const resumed = await store.updatePausedRun(scope, {
      sessionId: 's',
      runId: run.id,
      expectedPending: one,
      pending: both,
      resume: true,
    });
    expect(resumed).toMatchObject({
      ok: true,
      run: { status: 'running', pending: both },
      session: { status: 'busy', activeRunId: run.id },
    });
    expect(await store.get(scope, 's')).toMatchObject({ status: 'busy' });

    expect(
      await store.updatePausedRun(scope, {
        sessionId: 's',
        runId: run.id,
        expectedPending: both,
        pending: both,
        resume: true,
      }),
    ).toEqual({ ok: false, reason: 'not_paused' });
    expect(
      await store.updatePausedRun(scope, {
        sessionId: 'ghost',
        runId: run.id,
        expectedPending: {},
        pending: {},
        resume: true,
      }),
    ).toEqual({ ok: false, reason: 'not_found' });
    expect(await store.pauseRun(scope, 's', randomUUID(), {})).toBe('fenced');
  });

  it('lets only one of two concurrent decisions computed from the same state land', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    const awaiting = { decisions: {} };
    await store.pauseRun(scope, 's', run.id, awaiting);
    const results = await Promise.all(
      ['t1', 't2'].map((t) =>
        store.updatePausedRun(scope, {
          sessionId: 's',
          runId: run.id,
          expectedPending: awaiting,
          pending: { decisions: { [t]: 'execute' } },
          resume: false,
        }),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(results.filter((r) => !r.ok)).toEqual([{ ok: false, reason: 'conflict' }]);
  });
});

describe('endRun', () => {
  it('ends a run as failed, sets the session idle and restores the position', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run: first } = await startRun(scope, 's');
    await store.commit(scope, {
      sessionId: 's',
      runId: first.id,
      nodes: [node(1, null, 'q'), node(2, 1, 'a', usage(1, 1))],
      position: pos([1, 2]),
      nextNodeId: 3,
      usage: usage(1, 1),
      finish: { usage: usage(1, 1) },
    });

    // A branch run moves the path to its branch point, then fails before committing.
    const rollback = pos([1, 2]);
    const { run } = await startRun(scope, 's', { kind: 'branch', position: pos([1]), rollback });
    expect((await store.get(scope, 's'))?.path).toEqual([1]);
    const u = usage(4, 0);
    const ended = await store.endRun(scope, {
      sessionId: 's',
      runId: run.id,
      status: 'error',
      error: { code: 'provider_error', message: 'boom' },
      usage: u,
      restore: rollback,
    });
    expect(ended).toBe('ok');
    expect(await store.get(scope, 's')).toMatchObject({
      status: 'idle',
      activeRunId: null,
      path: [1, 2],
      cursors: { '1': 2 },
      head: 2,
      nextNodeId: 3,
    });
    expect(await store.getRun(scope, run.id)).toMatchObject({
      status: 'error',
      error: { code: 'provider_error', message: 'boom' },
      usage: u,
      finishedAt: expect.any(Date) as Date,
    });
    expect(
      await store.endRun(scope, { sessionId: 's', runId: run.id, status: 'cancelled', usage: emptyUsage() }),
    ).toBe('fenced');
    expect(await store.getRun(scope, run.id)).toMatchObject({ status: 'error' });
  });

  it('cancels without touching the position when no restore is given', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's', { position: pos([]) });
    await store.pauseRun(scope, 's', run.id, { x: 1 });
    expect(
      await store.endRun(scope, {
        sessionId: 's',
        runId: run.id,
        status: 'cancelled',
        error: null,
        usage: emptyUsage(),
      }),
    ).toBe('ok');
    expect(await store.get(scope, 's')).toMatchObject({ status: 'idle', activeRunId: null, path: [] });
    expect(await store.getRun(scope, run.id)).toMatchObject({ status: 'cancelled', error: null });
  });
});

describe('endRun keeping what an interrupted run had', () => {
  it('appends its nodes, moves the position and ends the run in one write, once: a second one is fenced', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run: first } = await startRun(scope, 's');
    await store.commit(scope, {
      sessionId: 's',
      runId: first.id,
      nodes: [node(1, null, 'q'), node(2, 1, 'a', usage(1, 1))],
      position: pos([1, 2]),
      nextNodeId: 3,
      usage: usage(1, 1),
      finish: { usage: usage(1, 1) },
    });
    const { run } = await startRun(scope, 's');
    const partial = node(4, 3, 'partial', usage(3, 2));
    const kept = {
      sessionId: 's',
      runId: run.id,
      status: 'cancelled' as const,
      usage: usage(3, 2),
      commit: {
        nodes: [
          node(3, 2, 'interrupted'),
          { ...partial, message: { ...partial.message, interrupted: true as const } },
        ],
        position: pos([1, 2, 3, 4]),
        nextNodeId: 5,
        usage: usage(3, 2),
      },
    };
    expect(await store.endRun(scope, kept)).toBe('ok');
    const loaded = await store.loadTree(scope, 's');
    expect(loaded?.session).toMatchObject({
      status: 'idle',
      activeRunId: null,
      path: [1, 2, 3, 4],
      head: 4,
      nextNodeId: 5,
      usage: addUsage(usage(1, 1), usage(3, 2)),
    });
    expect(loaded?.nodes.map((n) => [n.id, n.parentId, n.message.interrupted ?? false])).toEqual([
      [1, null, false],
      [2, 1, false],
      [3, 2, false],
      [4, 3, true],
    ]);
    expect(await store.getRun(scope, run.id)).toMatchObject({ status: 'cancelled', usage: usage(3, 2) });

    // The same end again (the api ending it while its worker did): fenced, nothing written twice.
    expect(await store.endRun(scope, kept)).toBe('fenced');
    expect((await store.loadTree(scope, 's'))?.nodes).toHaveLength(4);
  });

  it('writes nothing for a run that no longer owns the session', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    await store.endRun(scope, { sessionId: 's', runId: run.id, status: 'cancelled', usage: emptyUsage() });
    const { run: next } = await startRun(scope, 's');
    expect(
      await store.endRun(scope, {
        sessionId: 's',
        runId: run.id,
        status: 'cancelled',
        usage: emptyUsage(),
        commit: { nodes: [node(1, null, 'late')], position: pos([1]), nextNodeId: 2, usage: emptyUsage() },
      }),
    ).toBe('fenced');
    expect(await store.loadTree(scope, 's')).toMatchObject({
      session: { status: 'busy', activeRunId: next.id, path: [], nextNodeId: 1 },
      nodes: [],
    });
  });
});

describe('stageSteer', () => {
  it('stages on a busy or paused session, last one wins, and never on an idle one', async () => {
    // (The staged prompt records who staged it: a scope made in code acts as the admin.)
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    expect(await store.stageSteer(scope, 's', { content: 'too early' })).toBeNull();
    expect(await store.stageSteer(scope, 'ghost', { content: 'x' })).toBeNull();

    const { run } = await startRun(scope, 's');
    expect(await store.stageSteer(scope, 's', { content: 'first' })).toEqual({ runId: run.id });
    expect(await store.stageSteer(scope, 's', { content: 'second' })).toEqual({ runId: run.id });
    expect((await store.getRun(scope, run.id))?.steer).toEqual({
      content: 'second',
      actor: { type: 'admin' },
    });

    await store.pauseRun(scope, 's', run.id, {});
    expect(await store.stageSteer(scope, 's', { content: 'while paused' })).toEqual({ runId: run.id });
    expect((await store.getRun(scope, run.id))?.steer).toEqual({
      content: 'while paused',
      actor: { type: 'admin' },
    });

    await store.endRun(scope, { sessionId: 's', runId: run.id, status: 'cancelled', usage: emptyUsage() });
    expect(await store.stageSteer(scope, 's', { content: 'too late' })).toBeNull();
  });
});

describe('unfinishedRuns', () => {
  it('lists queued, running and paused runs of every tenant, and no finished one', async () => {
    const a = await newScope();
    const b = systemScope(await newTenant());
    for (const id of ['q', 'r', 'p', 'done']) {
      await store.create(a, { id, model: 'm' });
      await store.create(b, { id, model: 'm' });
    }
    const started = new Map<string, string>();
    for (const scope of [a, b]) {
      started.set(`${scope.tenantId}/q`, (await startRun(scope, 'q', { status: 'queued' })).run.id);
      started.set(`${scope.tenantId}/r`, (await startRun(scope, 'r')).run.id);
      const p = (await startRun(scope, 'p')).run.id;
      await store.pauseRun(scope, 'p', p, {});
      started.set(`${scope.tenantId}/p`, p);
      const done = (await startRun(scope, 'done')).run.id;
      await store.commit(scope, {
        sessionId: 'done',
        runId: done,
        nodes: [],
        position: pos([]),
        nextNodeId: 1,
        usage: emptyUsage(),
        finish: { usage: emptyUsage() },
      });
    }
    const mine = (await store.unfinishedRuns()).filter((r) => [a.tenantId, b.tenantId].includes(r.tenantId));
    const status = { q: 'queued', r: 'running', p: 'paused' } as const;
    expect(mine.map((r) => `${r.tenantId}/${r.sessionId}`).sort()).toEqual([...started.keys()].sort());
    for (const r of mine) {
      expect(r.runId).toBe(started.get(`${r.tenantId}/${r.sessionId}`));
      expect(r.status).toBe(status[r.sessionId as keyof typeof status]);
    }
  });
});

describe('who acts and what a run leaves behind (seed semantics)', () => {
  it('records on a run who started it: a key, a user, the system', async () => {
    const t = await newTenant();
    const key = tenantScope(t, { keyId: 'k-1' });
    await store.create(key, { id: 'a', model: 'm', userId: 'alice' });
    await store.create(key, { id: 'b', model: 'm' });
    await store.create(key, { id: 'c', model: 'm' });
    const byUser = await startRun(tenantScope(t, { userId: 'alice' }), 'a');
    const byKey = await startRun(key, 'b');
    const bySystem = await startRun(systemScope(t), 'c');
    expect(byUser.run.actor).toEqual({ type: 'user', userId: 'alice' });
    expect(byKey.run.actor).toEqual({ type: 'key', keyId: 'k-1' });
    expect(bySystem.run.actor).toEqual({ type: 'system' });
    expect((await store.getRun(key, byKey.run.id))?.actor).toEqual({ type: 'key', keyId: 'k-1' });
  });

  it('keeps the usage of a paused run’s steps on its record', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const { run } = await startRun(scope, 's');
    const usage = makeUsage({ inputTokens: 7, outputTokens: 3 });
    expect(await store.pauseRun(scope, 's', run.id, { awaiting: ['t1'] }, usage)).toBe('ok');
    expect(await store.getRun(scope, run.id)).toMatchObject({ status: 'paused', usage });
  });

  it('names the turns whose latest regeneration failed, with the error', async () => {
    const scope = await newScope();
    await store.create(scope, { id: 's', model: 'm' });
    const end = async (nodeId: number, status: 'cancelled' | 'error' | 'completed', message = 'x') => {
      const { run } = await startRun(scope, 's', { kind: 'branch', input: { nodeId } });
      if (status === 'completed') {
        await sql(
          scope,
          (tx) => tx.$executeRaw`UPDATE runs SET status = 'completed' WHERE id = ${run.id}::uuid`,
        );
        await sql(
          scope,
          (tx) => tx.$executeRaw`UPDATE sessions SET status = 'idle', active_run_id = NULL WHERE id = 's'`,
        );
      } else {
        await store.endRun(scope, {
          sessionId: 's',
          runId: run.id,
          status,
          error: status === 'error' ? { code: 'provider_error', message } : null,
          usage: emptyUsage(),
        });
      }
    };
    await end(1, 'error', 'first failure');
    await end(1, 'completed'); // a later regeneration of node 1 completed: no error any more
    await end(3, 'completed');
    await end(3, 'error', 'overloaded'); // the latest regeneration of node 3 failed
    await end(5, 'cancelled');
    // An edit (content) is not a regeneration of its node.
    const { run: edit } = await startRun(scope, 's', { kind: 'branch', input: { nodeId: 7, content: 'x' } });
    await store.endRun(scope, {
      sessionId: 's',
      runId: edit.id,
      status: 'error',
      error: { code: 'provider_error', message: 'edit failed' },
      usage: emptyUsage(),
    });
    expect(await store.failedTurns(scope, 's')).toEqual([
      { nodeId: 3, error: { code: 'provider_error', message: 'overloaded' } },
    ]);
    expect(await store.failedTurns(tenantScope(scope.tenantId, { userId: 'mallory' }), 's')).toEqual([]);
  });
});
