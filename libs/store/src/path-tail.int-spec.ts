// What a run reads of a long conversation, against the machine's Postgres: token counts kept with the nodes a
// commit appends, loadRun leaving a path longer than asked unread, and canopy_path_tail (through pathTail) reading
// the tail a token budget holds back to a turn's start, stopping at the nearest context summary, adding the kept
// first turns, estimating nodes stored without a count — with the rows it reads about the rows it answers.

import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '@canopy/testing';
import {
  assistantMessage,
  emptyUsage,
  makeUsage,
  tenantScope,
  userMessage,
  type Message,
  type Scope,
} from '@canopy/core';
import { Database } from './database';
import { PostgresSessionStore } from './postgres-session.store';
import type { NewNode, PathLoad } from './session-store.port';

let testDb: TestDatabase;
let db: Database;
let store: PostgresSessionStore;

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = new Database({ url: testDb.url, poolMax: 4, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 });
  store = new PostgresSessionStore(db);
});

afterAll(async () => {
  await db?.disconnect();
  await testDb?.drop();
});

async function newScope(): Promise<Scope> {
  const id = randomUUID();
  await db.withTenant({ tenantId: id }, (tx) =>
    tx.tenant.create({ data: { id, name: `tail-${id.slice(0, 8)}` } }),
  );
  return tenantScope(id);
}

const toolUse = (id: number): Message => ({
  role: 'assistant',
  content: [{ type: 'tool_use', id: `call-${id}`, name: 'clock', input: {} }],
  timestamp: id,
});
const toolResult = (id: number): Message => ({
  role: 'user',
  content: [{ type: 'tool_result', toolUseId: `call-${id - 1}`, content: 'noon', isError: false }],
  timestamp: id,
});

/**
 * A session whose path is `turns` turns of a prompt and a reply, each message counted `tokens` (null: stored
 * without a count), every fifth turn with a tool round between them (prompt, tool use, tool result, reply).
 * Committed in one call, as a run's commit would; answers the session's path.
 */
async function conversation(
  scope: Scope,
  id: string,
  turns: number,
  tokens: number | null,
): Promise<number[]> {
  await store.create(scope, { id, model: 'mock:echo' });
  const started = await store.startRun(scope, {
    sessionId: id,
    kind: 'prompt',
    input: { content: 'hi' },
    status: 'running',
  });
  if (!started.ok) throw new Error(started.reason);
  const nodes: NewNode[] = [];
  const add = (message: Message) =>
    nodes.push({
      id: nodes.length + 1,
      parentId: nodes.length === 0 ? null : nodes.length,
      message,
      usage: message.role === 'assistant' ? makeUsage({ inputTokens: 1, outputTokens: 1 }) : null,
      tokens,
    });
  for (let turn = 1; turn <= turns; turn++) {
    add(userMessage(`prompt ${turn}`, turn));
    if (turn % 5 === 0) {
      add(toolUse(nodes.length + 1));
      add(toolResult(nodes.length + 1));
    }
    add(assistantMessage(`reply ${turn}`, turn));
  }
  const path = nodes.map((n) => n.id);
  const result = await store.commit(scope, {
    sessionId: id,
    runId: started.run.id,
    nodes,
    position: { path, cursors: {}, head: path.at(-1)! },
    nextNodeId: path.length + 1,
    usage: emptyUsage(),
    finish: { usage: emptyUsage() },
  });
  expect(result.status).toBe('ok');
  return path;
}

const text = (m: Message) => JSON.stringify(m.content);
const tail = (tailTokens: number | null, extra: Partial<PathLoad> = {}): PathLoad => ({
  tailTokens,
  headTurns: 0,
  fromSummary: false,
  ...extra,
});

it('keeps each message’s count with its node; loadRun leaves a path longer than asked unread', async () => {
  const scope = await newScope();
  await conversation(scope, 's', 3, 7);
  const started = await store.startRun(scope, {
    sessionId: 's',
    kind: 'prompt',
    input: { content: 'next' },
    status: 'queued',
  });
  if (!started.ok) throw new Error(started.reason);
  const whole = await store.loadRun(scope, 's', started.run.id, 6);
  expect(whole!.pathNodes!.map((n) => n.id)).toEqual([1, 2, 3, 4, 5, 6]);
  expect(whole!.pathTokens).toEqual([7, 7, 7, 7, 7, 7]);
  // Taken again (an attempt more), now asked for fewer nodes than the path has: none read.
  const long = await store.loadRun(scope, 's', started.run.id, 5);
  expect(long!.pathNodes).toBeNull();
  expect(long!.pathTokens).toBeUndefined();
  expect(long!.session.path).toEqual([1, 2, 3, 4, 5, 6]);
});

it('reads the tail a budget holds, back to the start of a turn, in path order with positions', async () => {
  const scope = await newScope();
  const path = await conversation(scope, 'long', 1_000, 10);
  // 55 tokens: the last five messages pass 50; the tail goes on to the start of their turn.
  const part = await store.pathTail(scope, 'long', path, tail(55));
  const sum = part.tokens.reduce((a: number, t) => a + t!, 0);
  expect(sum).toBeGreaterThan(55);
  expect(part.nodes.length).toBeLessThanOrEqual(10);
  expect(part.nodes.at(-1)!.id).toBe(path.at(-1));
  expect(part.positions).toEqual(part.nodes.map((n) => path.indexOf(n.id)));
  const first = part.nodes[0]!.message;
  expect(first.role).toBe('user');
  expect(text(first)).toContain('prompt');
  // Ids in path order, contiguous up to the head.
  const ids = part.nodes.map((n) => n.id);
  expect(ids).toEqual(path.slice(path.length - ids.length));
  // Without a path given, the session's own, as stored.
  expect(await store.pathTail(scope, 'long', null, tail(55))).toEqual(part);
});

it('never starts the tail at a tool result: a tool round stays with its turn', async () => {
  const scope = await newScope();
  const path = await conversation(scope, 'tools', 5, 10);
  // Turn 5 is prompt, tool use, tool result, reply (nodes 9-12): a budget of 15 passes 10 at the tool result,
  // which is no turn's start; the tail reaches back to turn 5's prompt.
  const part = await store.pathTail(scope, 'tools', path, tail(15));
  expect(part.nodes.map((n) => n.id)).toEqual([9, 10, 11, 12]);
  expect(text(part.nodes[0]!.message)).toContain('prompt 5');
});

it('stops at the nearest context summary on the path, that node included', async () => {
  const scope = await newScope();
  const path = await conversation(scope, 'summarized', 300, 10);
  const summary = { sessionId: 'summarized', text: 's', tokens: 1, model: 'mock:echo', usage: emptyUsage() };
  await store.saveSummary(scope, { ...summary, throughNodeId: 100 });
  await store.saveSummary(scope, { ...summary, throughNodeId: path.at(-21)! });
  // A summary against a node off the path serves no run of it.
  const part = await store.pathTail(scope, 'summarized', path, tail(100_000, { fromSummary: true }));
  expect(part.nodes[0]!.id).toBe(path.at(-21));
  expect(part.nodes).toHaveLength(21);
  // Without fromSummary, the budget alone says where.
  const whole = await store.pathTail(scope, 'summarized', path, tail(100_000));
  expect(whole.nodes).toHaveLength(path.length);
});

it('adds the kept first turns when the tail does not reach them', async () => {
  const scope = await newScope();
  const path = await conversation(scope, 'kept', 400, 10);
  const part = await store.pathTail(scope, 'kept', path, tail(35, { headTurns: 2 }));
  const ids = part.nodes.map((n) => n.id);
  // Turns 1 and 2 (nodes 1-4), then the tail: the last two turns' four nodes.
  expect(ids.slice(0, 4)).toEqual([1, 2, 3, 4]);
  expect(ids.slice(4)).toEqual(path.slice(-4));
  expect(part.positions.slice(0, 4)).toEqual([0, 1, 2, 3]);
  // A tail that reaches back over them reads them once.
  const short = await conversation(scope, 'short', 3, 10);
  const all = await store.pathTail(scope, 'short', short, tail(1_000, { headTurns: 2 }));
  expect(all.nodes.map((n) => n.id)).toEqual(short);
});

it('estimates a node stored without a count from its message’s length; no budget reads the whole path', async () => {
  const scope = await newScope();
  const path = await conversation(scope, 'uncounted', 200, null);
  const part = await store.pathTail(scope, 'uncounted', path, tail(60));
  expect(part.tokens.every((t) => t === null)).toBe(true);
  // Each message's JSON is some 60-80 characters (about 15-20 tokens at four characters a token): a few turns.
  expect(part.nodes.length).toBeGreaterThanOrEqual(3);
  expect(part.nodes.length).toBeLessThan(12);
  const whole = await store.pathTail(scope, 'uncounted', path, tail(null));
  expect(whole.nodes.map((n) => n.id)).toEqual(path);
  expect(whole.positions).toEqual(path.map((_, i) => i));
});

it('reads about the rows it answers, however long the path', async () => {
  const scope = await newScope();
  const short = await conversation(scope, 'rows-short', 10, 10);
  const long = await conversation(scope, 'rows-long', 1_000, 10);
  const client = new Client({ connectionString: testDb.url });
  await client.connect();
  try {
    // As autovacuum would have by now: without statistics a fresh table's plans may scan it.
    await client.query('ANALYZE nodes');
    // Rows read from nodes by this backend's statements: pg_stat_xact_user_tables counts them in the transaction.
    const rowsRead = async (id: string, path: number[]) => {
      await client.query('BEGIN');
      try {
        const before = await client.query<{ n: string }>(
          `SELECT COALESCE(idx_tup_fetch, 0) + COALESCE(seq_tup_read, 0) AS n
             FROM pg_stat_xact_user_tables WHERE relname = 'nodes'`,
        );
        const answered = await client.query<{ nodes: unknown[] }>(
          `SELECT canopy_path_tail($1::uuid, $2, $3::int[], 250, 0, false, 10000) AS nodes`,
          [scope.tenantId, id, path],
        );
        const after = await client.query<{ n: string }>(
          `SELECT COALESCE(idx_tup_fetch, 0) + COALESCE(seq_tup_read, 0) AS n
             FROM pg_stat_xact_user_tables WHERE relname = 'nodes'`,
        );
        return {
          read: Number(after.rows[0]?.n ?? 0) - Number(before.rows[0]?.n ?? 0),
          answered: answered.rows[0]!.nodes.length,
        };
      } finally {
        await client.query('ROLLBACK');
      }
    };
    const small = await rowsRead('rows-short', short);
    const large = await rowsRead('rows-long', long);
    expect(small.answered).toBe(short.length);
    // The short one (24 nodes of 10 tokens) fits 250 tokens whole; the long one answers as many, to a turn's start.
    expect(large.answered).toBeLessThan(32);
    expect(large.read).toBeLessThanOrEqual(large.answered + 2);
    expect(large.read).toBeLessThanOrEqual(Math.max(small.read, 1) * 1.5 + 2);
  } finally {
    await client.end();
  }
});

it('reads nothing of another tenant’s session', async () => {
  const owner = await newScope();
  const path = await conversation(owner, 'mine', 20, 10);
  const stranger = await newScope();
  const part = await store.pathTail(stranger, 'mine', path, tail(100));
  expect(part.nodes).toEqual([]);
});
