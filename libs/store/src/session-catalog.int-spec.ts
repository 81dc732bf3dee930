// The population-level store against the machine's Postgres (a database of its own, RLS enforced): full-text
// search (syntax, filters, ranking, snippets, pages, users, the GIN index in the plan), counting, fork in one
// statement, whole-tree import, and the retention sweep's batches.

import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { CanopyException } from '@canopy/common';
import { adminUrl, createTestDatabase, type TestDatabase } from '@canopy/testing';
import {
  assistantMessage,
  makeUsage,
  sumUsage,
  tenantScope,
  userMessage,
  type Scope,
  type TreeNode,
} from '@canopy/core';
import { PostgresSessionStore } from './postgres-session.store';
// The retention sweep's batches are the tenancy library's (above this one): composed here, as a test may.
import { RetentionRepository, TenantsRepository } from '@canopy/tenancy';
import { SessionCatalogStore, type ImportSessionInput } from './session-catalog.store';
import { declareSearch, searchStatement } from './session-search';
import type { SessionFilter } from './session-filters';
import { CountingDatabase } from './testing/counting-database';

const userScope = (tenantId: string, userId: string) => tenantScope(tenantId, { userId });

let testDb: TestDatabase;
let db: CountingDatabase;
let catalog: SessionCatalogStore;
let store: PostgresSessionStore;
let retention: RetentionRepository;
let tenants: TenantsRepository;

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = new CountingDatabase({
    url: testDb.url,
    poolMax: 4,
    txMaxWaitMs: 5_000,
    // The GIN-plan test seeds 2 x 20,000 nodes, one transaction each: 20 s was passed once on a slow day.
    txTimeoutMs: 60_000,
  });
  catalog = new SessionCatalogStore(db);
  store = new PostgresSessionStore(db);
  retention = new RetentionRepository(db);
  tenants = new TenantsRepository(db);
});

afterAll(async () => {
  await db?.disconnect();
  await testDb?.drop();
});

/** The rows of `nodes` a session has (a fork's shared nodes are not among them). */
async function realNodes(scope: Scope, id: string): Promise<number> {
  const [row] = await db.withTenantSql(scope, (tx) =>
    tx.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM nodes WHERE tenant_id = $1::uuid AND session_id = $2`,
      [scope.tenantId, id],
    ),
  );
  return row!.n;
}

/** A session's base: the session it shares nodes with and their ids. */
async function baseOf(
  scope: Scope,
  id: string,
): Promise<{ sessionId: string | null; nodeIds: number[] | null }> {
  const [row] = await db.withTenantSql(scope, (tx) =>
    tx.query<{ base_session_id: string | null; base_node_ids: number[] | null }>(
      `SELECT base_session_id, base_node_ids FROM sessions WHERE tenant_id = $1::uuid AND id = $2`,
      [scope.tenantId, id],
    ),
  );
  return { sessionId: row!.base_session_id, nodeIds: row!.base_node_ids };
}

async function newTenant(): Promise<Scope> {
  const id = randomUUID();
  await db.withTenantSql({ tenantId: id }, (tx) =>
    tx.query(`INSERT INTO tenants (id, name) VALUES ($1::uuid, $2)`, [id, `acme-${id.slice(0, 8)}`]),
  );
  return tenantScope(id);
}

/** A linear session of these messages (user, assistant, user ...), via the import road. */
function linear(texts: string[], extra: Partial<ImportSessionInput> = {}): ImportSessionInput {
  const nodes: TreeNode[] = texts.map((text, i) => ({
    id: i + 1,
    parentId: i === 0 ? null : i,
    message: i % 2 === 0 ? userMessage(text, 1_000 + i) : assistantMessage(text, 1_000 + i),
    usage: i % 2 === 1 ? makeUsage({ inputTokens: i, outputTokens: 2 * i, inputCost: 0.1 * i }) : null,
  }));
  const cursors: Record<string, number> = {};
  for (let i = 2; i <= nodes.length; i++) cursors[String(i - 1)] = i;
  return {
    title: null,
    model: 'mock:echo',
    system: null,
    opts: {},
    tools: [],
    metadata: {},
    userId: null,
    pinned: false,
    nodes,
    position: { path: nodes.map((n) => n.id), cursors, head: nodes.length ? nodes.length : null },
    nextNodeId: nodes.length + 1,
    ...extra,
  };
}

describe('search', () => {
  let scope: Scope;
  let ids: Record<string, string>;

  beforeAll(async () => {
    scope = await newTenant();
    const other = await newTenant();
    const make = async (name: string, texts: string[], extra: Partial<ImportSessionInput> = {}) =>
      (await catalog.importSession(scope, linear(texts, extra))).id;
    ids = {
      deploy: await make('deploy', ['How do I deploy the api to production?', 'Use the deploy script.'], {
        metadata: { team: 'ops', tier: 'gold' },
        userId: 'alice',
      }),
      kubernetes: await make(
        'kubernetes',
        ['kubernetes rollout of the worker', 'Run kubectl rollout restart.'],
        {
          metadata: { team: 'ops', tier: 'silver' },
          userId: 'bob',
          model: 'mock:script',
        },
      ),
      cooking: await make(
        'cooking',
        ['A recipe for pancakes', 'Flour, eggs and milk; deploy butter generously.'],
        {
          metadata: { team: 'kitchen' },
          userId: 'alice',
        },
      ),
      many: await make(
        'many',
        ['deploy deploy deploy, deploy again', 'deploy', 'and deploy one more time', 'deploy!'],
        { userId: 'carol' },
      ),
    };
    // Another tenant's identical words never show.
    await catalog.importSession(other, linear(['How do I deploy the api to production?']));
  });

  const search = (q: string, filter = {}, s = scope, limit = 20, cursor: string | null = null) =>
    catalog.search(s, { q, filter, limit, cursor });
  const found = async (q: string, filter = {}, s = scope) =>
    (await search(q, filter, s)).data.map((h) => h.session.id);

  it('finds words, quoted phrases, or and exclusions (websearch syntax), in this tenant only', async () => {
    expect((await found('deploy')).sort()).toEqual([ids.deploy, ids.cooking, ids.many].sort());
    expect(await found('"deploy the api"')).toEqual([ids.deploy]);
    expect((await found('pancakes or kubectl')).sort()).toEqual([ids.cooking, ids.kubernetes].sort());
    expect((await found('deploy -butter')).sort()).toEqual([ids.deploy, ids.many].sort());
    expect(await found('nothing-like-this-anywhere')).toEqual([]);
  });

  it('ranks the session whose best message matches best first, with its matching nodes and a marked snippet', async () => {
    const { data } = await search('deploy');
    expect(data[0]!.session.id).toBe(ids.many);
    expect(data.map((h) => h.rank)).toEqual([...data.map((h) => h.rank)].sort((a, b) => b - a));
    const many = data[0]!;
    expect(many.matches).toBe(4);
    expect(many.nodeIds).toHaveLength(4);
    expect(many.nodeIds[0]).toBe(1);
    const deploy = data.find((h) => h.session.id === ids.deploy)!;
    expect(deploy.nodeIds.sort()).toEqual([1, 2]);
    const { text, highlights } = deploy.snippet;
    expect(highlights.length).toBeGreaterThan(0);
    for (const [start, end] of highlights) expect(text.slice(start, end).toLowerCase()).toBe('deploy');
  });

  it('combines with the list filters: user, metadata (AND, and any-of), model, status, dates, ids', async () => {
    expect(await found('deploy', { userId: 'alice' })).toEqual(
      expect.arrayContaining([ids.deploy, ids.cooking]),
    );
    expect(await found('deploy', { userId: 'alice', metadata: { team: 'ops' } })).toEqual([ids.deploy]);
    expect(await found('deploy or kubernetes', { metadata: { team: 'ops', tier: 'gold' } })).toEqual([
      ids.deploy,
    ]);
    expect(
      (await found('deploy or kubernetes', { metadataAny: { tier: ['gold', 'silver'] } })).sort(),
    ).toEqual([ids.deploy, ids.kubernetes].sort());
    expect(await found('deploy or kubernetes', { model: 'mock:script' })).toEqual([ids.kubernetes]);
    expect(await found('deploy', { status: ['busy'] })).toEqual([]);
    expect((await found('deploy', { createdBefore: new Date(Date.now() + 60_000) })).length).toBe(3);
    expect(await found('deploy', { updatedAfter: new Date(Date.now() + 60_000) })).toEqual([]);
    expect(await found('deploy', { ids: [ids.cooking] })).toEqual([ids.cooking]);
    expect((await found('deploy', { excludeIds: [ids.cooking] })).sort()).toEqual(
      [ids.deploy, ids.many].sort(),
    );
  });

  it("a user scope searches only its user's sessions", async () => {
    const alice = userScope(scope.tenantId, 'alice');
    expect((await found('deploy or kubernetes', {}, alice)).sort()).toEqual([ids.deploy, ids.cooking].sort());
  });

  it('pages by cursor without gaps or repeats, and refuses a forged cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await search('deploy or kubernetes or pancakes', {}, scope, 1, cursor);
      expect(page.data.length).toBeLessThanOrEqual(1);
      seen.push(...page.data.map((h) => h.session.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen.sort()).toEqual(Object.values(ids).sort());
    await expect(search('deploy', {}, scope, 1, 'bm90IGEgY3Vyc29y')).rejects.toMatchObject({
      code: 'bad_request',
    });
  });

  it('refuses a query with no word to look for', async () => {
    for (const q of ['-deploy', '!!!', '""']) {
      await expect(search(q)).rejects.toBeInstanceOf(CanopyException);
    }
  });

  it('counts with the same filters, with or without words', async () => {
    expect(await catalog.count(scope, { q: 'deploy', filter: {} })).toBe(3);
    expect(await catalog.count(scope, { q: 'deploy', filter: { userId: 'alice' } })).toBe(2);
    expect(await catalog.count(scope, { filter: { metadata: { team: 'ops' } } })).toBe(2);
    expect(await catalog.count(userScope(scope.tenantId, 'bob'), { filter: {} })).toBe(1);
  });

  it('never answers a deleted session (its words go with it)', async () => {
    const gone = (await catalog.importSession(scope, linear(['ephemeral zebra words']))).id;
    expect(await found('zebra')).toEqual([gone]);
    expect(await store.delete(scope, gone)).toBe(true);
    expect(await found('zebra')).toEqual([]);
    expect(await catalog.count(scope, { q: 'zebra', filter: {} })).toBe(0);
  });

  it('shows nothing of node_search to a transaction that declared no search', async () => {
    const rows = await db.withTenantSql(scope, (tx) => tx.query('SELECT * FROM node_search'));
    expect(rows).toEqual([]);
  });

  it("computes each added node's words once (one INSERT of three nodes, two with text: three vectors, two rows)", async () => {
    // As a superuser on the test database, in a transaction rolled back: track_functions = all keeps the SQL
    // function from being inlined, so the transaction's own function counters show each evaluation.
    const admin = new Client({ connectionString: adminUrl().replace(/\/[^/]*$/, `/${testDb.name}`) });
    await admin.connect();
    try {
      await admin.query('BEGIN');
      await admin.query(`SET LOCAL track_functions = 'all'`);
      await admin.query(
        `INSERT INTO sessions (tenant_id, id, model) VALUES ($1::uuid, 'vectors', 'mock:echo')`,
        [scope.tenantId],
      );
      const text = (t: string) =>
        JSON.stringify({ role: 'user', timestamp: 0, content: [{ type: 'text', text: t }] });
      await admin.query(
        `INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message)
         VALUES ($1::uuid, 'vectors', 1, NULL, 'user', $2::jsonb), ($1::uuid, 'vectors', 2, 1, 'assistant', $3::jsonb),
                ($1::uuid, 'vectors', 3, 2, 'user', $4::jsonb)`,
        [
          scope.tenantId,
          text('counting vectors'),
          JSON.stringify({ role: 'assistant', timestamp: 0, content: [] }),
          text('once each'),
        ],
      );
      const { rows: calls } = await admin.query<{ calls: string }>(
        `SELECT calls FROM pg_stat_xact_user_functions WHERE funcname = 'canopy_search_vector'`,
      );
      expect(calls.map((r) => Number(r.calls))).toEqual([3]);
      const { rows: indexed } = await admin.query<{ node_id: number }>(
        `SELECT node_id FROM node_search WHERE tenant_id = $1::uuid AND session_id = 'vectors' ORDER BY node_id`,
        [scope.tenantId],
      );
      expect(indexed.map((r) => r.node_id)).toEqual([1, 3]);
    } finally {
      await admin.query('ROLLBACK').catch(() => undefined);
      await admin.end();
    }
  });

  it('plans the words through the GIN index on (tenant, words), under row-level security', async () => {
    // Enough rows (in this and another tenant) that a sequential scan would not be the cheap plan anyway.
    for (const s of [scope, await newTenant()]) {
      await db.withTenantSql(s, async (tx) => {
        await tx.query(
          `INSERT INTO sessions (tenant_id, id, model) SELECT $1::uuid, 'bulk-' || g, 'mock:echo' FROM generate_series(1, 400) g`,
          [s.tenantId],
        );
        await tx.query(
          `INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message)
           SELECT $1::uuid, 'bulk-' || (g % 400 + 1), g / 400 + 1, NULLIF(g / 400, 0), 'user',
                  jsonb_build_object('role', 'user', 'timestamp', 0, 'content',
                    jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'filler word' || (g % 5000) || ' text ' || md5(g::text))))
             FROM generate_series(0, 19999) g`,
          [s.tenantId],
        );
      });
    }
    await db.withAdminSql('test: fresh statistics', (tx) => tx.query('ANALYZE node_search, nodes, sessions'));
    const plan = await db.withTenantSql(scope, async (tx) => {
      await declareSearch(tx, 'word17 or "deploy the api"');
      const [row] = await tx.query<{ 'QUERY PLAN': unknown }>(
        `EXPLAIN (FORMAT JSON) SELECT node_search.session_id FROM node_search
          WHERE node_search.tenant_id = $1::uuid AND node_search.search @@ canopy_search_query()`,
        [scope.tenantId],
      );
      return JSON.stringify(row!['QUERY PLAN']);
    });
    expect(plan).toContain('"Index Name":"node_search_idx"');
    expect(plan).not.toContain('Seq Scan');
    // The search itself: the same index, and the tenant among its conditions.
    const searchPlan = await db.withTenantSql(scope, async (tx) => {
      await declareSearch(tx, 'word17');
      const rows = await tx.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT count(*) FROM node_search WHERE node_search.search @@ canopy_search_query()`,
      );
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(searchPlan).toMatch(/Bitmap Index Scan on node_search_idx[\s\S]*Index Cond: \(\(tenant_id = /);
    // And the service's own statement (ranked page with snippets) for the same words.
    const pagePlan = await db.withTenantSql(scope, async (tx) => {
      await declareSearch(tx, 'word17');
      const statement = searchStatement(scope, {}, 20, null);
      const rows = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${statement.text}`, statement.values);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(pagePlan).toContain('Bitmap Index Scan on node_search_idx');
    expect((await search('word17')).data.map((h) => h.session.id).sort()).toEqual(['bulk-18', 'bulk-218']);
  });
});

describe('fork', () => {
  let scope: Scope;
  beforeAll(async () => {
    scope = await newTenant();
  });

  it('shares the path root..node in one statement, ids from 1, usage per node, the source untouched', async () => {
    // Tree: 1 -> 2 -> 3 -> 4 (path), and a branch 2 -> 5.
    const base = linear(['q1', 'a1', 'q2', 'a2']);
    base.nodes.push({ id: 5, parentId: 2, message: userMessage('q2 edited', 2_000), usage: null });
    base.nextNodeId = 6;
    const source = await catalog.importSession(scope, {
      ...base,
      title: 'source',
      metadata: { team: 'ops' },
    });
    const before = await store.loadTree(scope, source.id);

    db.statements = db.roundTrips = 0;
    const forked = await catalog.fork(scope, { sessionId: source.id, nodeId: 5 });
    expect([db.statements, db.roundTrips]).toEqual([1, 1]);
    if (!forked.ok) throw new Error(forked.reason);
    expect(forked.copied).toBe(0);
    // Copy-on-write: no node row of its own, the source's three nodes as its base.
    expect(await realNodes(scope, forked.session.id)).toBe(0);
    expect(await baseOf(scope, forked.session.id)).toEqual({ sessionId: source.id, nodeIds: [1, 2, 5] });
    const tree = (await store.loadTree(scope, forked.session.id))!;
    expect(tree.nodes.map((n) => [n.id, n.parentId])).toEqual([
      [1, null],
      [2, 1],
      [3, 2],
    ]);
    expect(tree.nodes.map((n) => n.message)).toEqual(
      [1, 2, 5].map((id) => before!.nodes.find((n) => n.id === id)!.message),
    );
    expect(tree.nodes[1]!.usage).toEqual(before!.nodes[1]!.usage);
    expect(tree.session).toMatchObject({
      path: [1, 2, 3],
      head: 3,
      cursors: {}, // one child each: a walk down takes it (see the fork's migration)
      nextNodeId: 4,
      title: 'source',
      status: 'idle',
      metadata: { team: 'ops', forkedFrom: { sessionId: source.id, nodeId: 5 } },
    });
    expect(tree.session.usage).toEqual(sumUsage(tree.nodes.map((n) => n.usage)));
    expect(await store.loadTree(scope, source.id)).toEqual(before);

    // Search finds the fork's shared messages under its own ids (the source's index rows), and not the source's
    // messages the fork left out.
    const hits = async (q: string) =>
      (await catalog.search(scope, { q, filter: {}, limit: 20, cursor: null })).data
        .filter((h) => h.session.id === forked.session.id)
        .map((h) => h.nodeIds);
    expect(await hits('edited')).toEqual([[3]]);
    expect(await hits('q1')).toEqual([[1]]);
    expect(await hits('q2')).toEqual([[3]]);
    expect(await hits('a2')).toEqual([]);

    // Default: the active path's tip; title and metadata given.
    const tip = await catalog.fork(scope, { sessionId: source.id, title: 'mine', metadata: { x: 1 } });
    if (!tip.ok) throw new Error(tip.reason);
    expect(tip.session).toMatchObject({
      path: [1, 2, 3, 4],
      title: 'mine',
      metadata: { x: 1, forkedFrom: { nodeId: 4 } },
    });
  });

  it('forks a node of the active path from the stored path, as the walk up would', async () => {
    // Tree: 1 -> 2 -> 3 -> 4 -> 5 -> 6 (path), and a branch 4 -> 7 -> 8 off it.
    const base = linear(['q1', 'a1', 'q2', 'a2', 'q3', 'a3']);
    base.nodes.push({ id: 7, parentId: 4, message: userMessage('q3 edited', 7_000), usage: null });
    base.nodes.push({ id: 8, parentId: 7, message: userMessage('a3 edited', 8_000), usage: null });
    base.nextNodeId = 9;
    const source = await catalog.importSession(scope, base);
    const before = (await store.loadTree(scope, source.id))!;
    const messagesOf = (ids: number[]) => ids.map((id) => before.nodes.find((n) => n.id === id)!.message);
    for (const [nodeId, path] of [
      [1, [1]],
      [4, [1, 2, 3, 4]],
      [6, [1, 2, 3, 4, 5, 6]],
      [8, [1, 2, 3, 4, 7, 8]],
    ] as const) {
      const forked = await catalog.fork(scope, { sessionId: source.id, nodeId });
      if (!forked.ok) throw new Error(forked.reason);
      expect(forked.copied).toBe(0);
      expect(await baseOf(scope, forked.session.id)).toEqual({ sessionId: source.id, nodeIds: path });
      const tree = (await store.loadTree(scope, forked.session.id))!;
      expect(tree.session.path).toEqual(path.map((_, i) => i + 1));
      expect(tree.nodes.map((n) => n.message)).toEqual(messagesOf([...path]));
      expect(tree.session.metadata).toEqual({ forkedFrom: { sessionId: source.id, nodeId } });
    }
  });

  it('works while the source is busy, reading only its committed nodes', async () => {
    const source = await catalog.importSession(scope, linear(['q1', 'a1']));
    const started = await store.startRun(scope, {
      sessionId: source.id,
      kind: 'prompt',
      input: {},
      status: 'running',
    });
    expect(started.ok).toBe(true);
    const forked = await catalog.fork(scope, { sessionId: source.id });
    expect(forked.ok && forked.session.path).toEqual([1, 2]);
    expect((await store.get(scope, source.id))!.status).toBe('busy');
  });

  it('answers not_found for an unknown session or another user, node_not_found for an unknown node', async () => {
    const source = await catalog.importSession(scope, linear(['q1']));
    expect(await catalog.fork(scope, { sessionId: 'nope' })).toEqual({ ok: false, reason: 'not_found' });
    expect(await catalog.fork(userScope(scope.tenantId, 'mallory'), { sessionId: source.id })).toEqual({
      ok: false,
      reason: 'not_found',
    });
    expect(await catalog.fork(scope, { sessionId: source.id, nodeId: 99 })).toEqual({
      ok: false,
      reason: 'node_not_found',
    });
  });

  it('of an empty session is an empty session', async () => {
    const source = await catalog.importSession(scope, linear([]));
    const forked = await catalog.fork(scope, { sessionId: source.id });
    expect(forked.ok && forked.session).toMatchObject({ path: [], head: null, nextNodeId: 1 });
    expect(forked.ok && (await baseOf(scope, forked.session.id))).toEqual({ sessionId: null, nodeIds: null });
  });
});
describe('copy-on-write fork', () => {
  let scope: Scope;
  beforeAll(async () => {
    scope = await newTenant();
  });

  /** One turn on the session through the run road: a prompt and its answer after the head, committed, finished. */
  async function turn(s: Scope, sessionId: string, text: string): Promise<void> {
    const started = await store.startRun(s, { sessionId, kind: 'prompt', input: {}, status: 'running' });
    if (!started.ok) throw new Error(started.reason);
    const context = (await store.loadRun(s, sessionId, started.run.id))!;
    // The run's context is the whole active path, shared nodes included.
    expect(context.pathNodes!.map((n) => n.id)).toEqual(context.session.path);
    const { head, path, cursors, nextNodeId } = context.session;
    const usage = makeUsage({ inputTokens: 3, outputTokens: 4 });
    const [prompt, answer] = [nextNodeId, nextNodeId + 1];
    const result = await store.commit(s, {
      sessionId,
      runId: started.run.id,
      nodes: [
        { id: prompt, parentId: head, message: userMessage(text, 5_000), usage: null },
        { id: answer, parentId: prompt, message: assistantMessage(`${text} answered`, 5_001), usage },
      ],
      position: {
        path: [...path, prompt, answer],
        cursors: {
          ...cursors,
          ...(head !== null ? { [String(head)]: prompt } : {}),
          [String(prompt)]: answer,
        },
        head: answer,
      },
      nextNodeId: answer + 1,
      usage,
      finish: { usage },
    });
    expect(result).toMatchObject({ status: 'ok' });
  }

  /** What a fork must read: the path's nodes of the source, renumbered 1..n. */
  async function copyOf(s: Scope, sessionId: string, path: number[]): Promise<TreeNode[]> {
    const source = (await store.loadTree(s, sessionId))!;
    return path.map((id, i) => ({
      ...source.nodes.find((n) => n.id === id)!,
      id: i + 1,
      parentId: i === 0 ? null : i,
    }));
  }

  const exported = async (s: Scope, id: string) =>
    (await catalog.exportPage(s, { ids: [id] }, 10, null)).data.map((d) => d.nodes);

  const hitsOf = async (s: Scope, q: string, filter: SessionFilter = {}) =>
    Object.fromEntries(
      (await catalog.search(s, { q, filter, limit: 50, cursor: null })).data.map((h) => [
        h.session.id,
        h.nodeIds,
      ]),
    );

  it('reads, exports and runs on a fork as on a copy; a turn hangs under a shared node', async () => {
    const source = await catalog.importSession(scope, linear(['cq1', 'ca1', 'cq2', 'ca2', 'cq3', 'ca3']));
    const forked = await catalog.fork(scope, { sessionId: source.id, nodeId: 4 });
    if (!forked.ok) throw new Error(forked.reason);
    const fork = forked.session.id;
    const expected = await copyOf(scope, source.id, [1, 2, 3, 4]);
    expect(await realNodes(scope, fork)).toBe(0);
    expect((await store.loadTree(scope, fork))!.nodes).toEqual(expected);
    expect(await exported(scope, fork)).toEqual([expected]);
    expect(forked.session.usage).toEqual(sumUsage(expected.map((n) => n.usage)));

    // A run on the fork: its first node's parent (4) is shared.
    await turn(scope, fork, 'cfork');
    const tree = (await store.loadTree(scope, fork))!;
    expect(tree.nodes.map((n) => [n.id, n.parentId])).toEqual([
      [1, null],
      [2, 1],
      [3, 2],
      [4, 3],
      [5, 4],
      [6, 5],
    ]);
    expect(tree.session).toMatchObject({ path: [1, 2, 3, 4, 5, 6], head: 6, nextNodeId: 7 });
    expect(tree.session.usage).toEqual(sumUsage(tree.nodes.map((n) => n.usage)));
    expect(await realNodes(scope, fork)).toBe(2);
    expect(await exported(scope, fork)).toEqual([tree.nodes]);
    // The source is untouched.
    expect((await store.loadTree(scope, source.id))!.nodes).toHaveLength(6);
    expect(await realNodes(scope, source.id)).toBe(6);

    // A node whose parent is neither real nor shared is refused, as the foreign key did.
    const started = await store.startRun(scope, {
      sessionId: fork,
      kind: 'prompt',
      input: {},
      status: 'running',
    });
    if (!started.ok) throw new Error(started.reason);
    await expect(
      store.commit(scope, {
        sessionId: fork,
        runId: started.run.id,
        nodes: [{ id: 8, parentId: 7, message: userMessage('orphan', 1), usage: null }],
        position: { path: [8], cursors: {}, head: 8 },
        nextNodeId: 9,
        usage: makeUsage({}),
      }),
    ).rejects.toMatchObject({ code: 'not_found' });
    expect(await realNodes(scope, fork)).toBe(2);
  });

  /** Every node's stored path usage (as a usage), by id, a fork's shared ones included; null where not known. */
  async function pathUsages(s: Scope, id: string): Promise<Record<number, unknown>> {
    const rows = await db.withTenantSql(s, (tx) =>
      tx.query<{ id: number; usage: unknown }>(
        `SELECT id, canopy_usage_of_vector(path_usage) AS usage FROM canopy_session_nodes($1::uuid, $2) ORDER BY id`,
        [s.tenantId, id],
      ),
    );
    return Object.fromEntries(rows.map((r) => [r.id, r.usage]));
  }

  /** What they must be: sumUsage over each node's path root -> node, in path order. */
  function sumsOfPaths(nodes: TreeNode[]): Record<number, unknown> {
    const byId = new Map(nodes.map((n) => [n.id, n]));
    const out: Record<number, unknown> = {};
    for (const n of nodes) {
      const path: TreeNode[] = [];
      for (
        let at: TreeNode | undefined = n;
        at;
        at = at.parentId === null ? undefined : byId.get(at.parentId)
      )
        path.unshift(at);
      out[n.id] = sumUsage(path.map((p) => p.usage));
    }
    return out;
  }

  it("keeps each node's path usage on every road that writes nodes; a fork's usage is its tip's", async () => {
    const source = await catalog.importSession(scope, linear(['pq1', 'pa1', 'pq2', 'pa2', 'pq3', 'pa3']));
    await turn(scope, source.id, 'psource'); // a commit under imported nodes
    const first = await catalog.fork(scope, { sessionId: source.id, nodeId: 4 });
    if (!first.ok) throw new Error(first.reason);
    await turn(scope, first.session.id, 'pfirst'); // a commit under a shared node
    const second = await catalog.fork(scope, { sessionId: first.session.id }); // copies the first's own nodes
    if (!second.ok) throw new Error(second.reason);
    expect(second.copied).toBe(2);
    const check = async (id: string) => {
      const tree = (await store.loadTree(scope, id))!;
      // Float costs (0.1 * i): the same additions in the same order as sumUsage, to the last bit.
      expect(await pathUsages(scope, id)).toEqual(sumsOfPaths(tree.nodes));
      return tree;
    };
    await check(source.id);
    const firstTree = await check(first.session.id);
    await check(second.session.id);
    expect(second.session.usage).toEqual(sumUsage(firstTree.nodes.map((n) => n.usage)));
    expect(second.session.usage.inputCost).toBe(0.1 + 0.30000000000000004); // 0.1 * 1 + 0.1 * 3, in JavaScript

    // The source deleted: its forks' shared nodes become real rows, their path usages with them.
    await store.delete(scope, source.id);
    expect(await baseOf(scope, first.session.id)).toEqual({ sessionId: null, nodeIds: null });
    await check(first.session.id);

    // Not known (nodes from before path usages): the fork sums its path as it did before.
    await db.withTenantSql(scope, (tx) =>
      tx.query(`UPDATE nodes SET path_usage = NULL WHERE tenant_id = $1::uuid AND session_id = $2`, [
        scope.tenantId,
        first.session.id,
      ]),
    );
    const third = await catalog.fork(scope, { sessionId: first.session.id });
    if (!third.ok) throw new Error(third.reason);
    expect(third.session.usage).toEqual(sumUsage(firstTree.nodes.map((n) => n.usage)));
  });

  it('forks a fork from the first base, copying only the source fork own nodes on the path', async () => {
    const source = await catalog.importSession(scope, linear(['gq1', 'ga1', 'gq2', 'ga2']));
    const first = await catalog.fork(scope, { sessionId: source.id, nodeId: 2 });
    if (!first.ok) throw new Error(first.reason);
    await turn(scope, first.session.id, 'gfirst'); // nodes 3, 4 of the first fork: real
    const firstTree = (await store.loadTree(scope, first.session.id))!;

    // At its tip: shares 1..2 with the source (not with the first fork), copies 3..4.
    db.statements = db.roundTrips = 0;
    const second = await catalog.fork(scope, { sessionId: first.session.id });
    expect([db.statements, db.roundTrips]).toEqual([1, 1]);
    if (!second.ok) throw new Error(second.reason);
    expect(second.copied).toBe(2);
    expect(await baseOf(scope, second.session.id)).toEqual({ sessionId: source.id, nodeIds: [1, 2] });
    const secondTree = (await store.loadTree(scope, second.session.id))!;
    expect(secondTree.nodes).toEqual(firstTree.nodes);
    expect(secondTree.session.usage).toEqual(sumUsage(firstTree.nodes.map((n) => n.usage)));
    expect(secondTree.session.metadata).toEqual({ forkedFrom: { sessionId: first.session.id, nodeId: 4 } });

    // At a shared node: shares, copies nothing.
    const third = await catalog.fork(scope, { sessionId: first.session.id, nodeId: 1 });
    if (!third.ok) throw new Error(third.reason);
    expect(third.copied).toBe(0);
    expect(await baseOf(scope, third.session.id)).toEqual({ sessionId: source.id, nodeIds: [1] });
    expect((await store.loadTree(scope, third.session.id))!.nodes).toEqual(firstTree.nodes.slice(0, 1));

    // At an own node off the active path (a branch under a shared node): walks up to the shared part.
    const started = await store.startRun(scope, {
      sessionId: first.session.id,
      kind: 'prompt',
      input: {},
      status: 'running',
    });
    if (!started.ok) throw new Error(started.reason);
    await store.commit(scope, {
      sessionId: first.session.id,
      runId: started.run.id,
      nodes: [{ id: 5, parentId: 1, message: userMessage('gbranch', 6_000), usage: null }],
      position: firstTree.session, // the active path stays 1..4
      nextNodeId: 6,
      usage: makeUsage({}),
      finish: { usage: makeUsage({}) },
    });
    const fourth = await catalog.fork(scope, { sessionId: first.session.id, nodeId: 5 });
    if (!fourth.ok) throw new Error(fourth.reason);
    expect(fourth.copied).toBe(1);
    expect(await baseOf(scope, fourth.session.id)).toEqual({ sessionId: source.id, nodeIds: [1] });
    expect(
      (await store.loadTree(scope, fourth.session.id))!.nodes.map((n) => [n.id, n.parentId, n.message]),
    ).toEqual([
      [1, null, firstTree.nodes[0]!.message],
      [2, 1, userMessage('gbranch', 6_000)],
    ]);
  });

  it('keeps the context summaries of the nodes it takes, against its own ids, in the same statement', async () => {
    const summary = (throughNodeId: number, text: string) => ({
      throughNodeId,
      text,
      tokens: 7,
      model: 'mock:echo',
      usage: makeUsage({ inputTokens: 500, outputTokens: 9 }),
    });
    // Tree: 1 -> 2 -> 3 -> 4 (path) and a branch 2 -> 5, imported with summaries through 2 and through 4.
    const base = linear(['sq1', 'sa1', 'sq2', 'sa2'], {
      summaries: [summary(2, 'through 2'), summary(4, 'through 4')],
    });
    base.nodes.push({ id: 5, parentId: 2, message: userMessage('sq2 edited', 2_000), usage: null });
    base.nextNodeId = 6;
    const source = await catalog.importSession(scope, base);
    expect(await store.summariesOf(scope, source.id)).toEqual([
      summary(2, 'through 2'),
      summary(4, 'through 4'),
    ]);
    await store.saveSummary(scope, { sessionId: source.id, ...summary(5, 'through 5') });

    // Through the branch (path 1, 2, 5): the summaries of 2 and 5, 5 renumbered 3; not 4's, off the path.
    db.statements = db.roundTrips = 0;
    const branch = await catalog.fork(scope, { sessionId: source.id, nodeId: 5 });
    expect([db.statements, db.roundTrips]).toEqual([1, 1]);
    if (!branch.ok) throw new Error(branch.reason);
    expect(await store.summariesOf(scope, branch.session.id)).toEqual([
      summary(2, 'through 2'),
      summary(3, 'through 5'),
    ]);
    expect(await store.summariesOn(scope, branch.session.id, [1, 2, 3])).toEqual([
      { throughNodeId: 2, text: 'through 2', tokens: 7 },
      { throughNodeId: 3, text: 'through 5', tokens: 7 },
    ]);
    // Above a summary's node: none of it.
    const early = await catalog.fork(scope, { sessionId: source.id, nodeId: 1 });
    if (!early.ok) throw new Error(early.reason);
    expect(await store.summariesOf(scope, early.session.id)).toEqual([]);

    // A fork of a fork: its shared nodes' summaries (stored against its ids) and those of its own nodes.
    const first = await catalog.fork(scope, { sessionId: source.id, nodeId: 2 });
    if (!first.ok) throw new Error(first.reason);
    // Nodes 3, 4 of the first fork: its own.
    const started = await store.startRun(scope, {
      sessionId: first.session.id,
      kind: 'prompt',
      input: {},
      status: 'running',
    });
    if (!started.ok) throw new Error(started.reason);
    await store.commit(scope, {
      sessionId: first.session.id,
      runId: started.run.id,
      nodes: [
        { id: 3, parentId: 2, message: userMessage('sq3', 6_000), usage: null },
        { id: 4, parentId: 3, message: assistantMessage('sa3', 6_001), usage: null },
      ],
      position: { path: [1, 2, 3, 4], cursors: { '1': 2, '2': 3, '3': 4 }, head: 4 },
      nextNodeId: 5,
      usage: makeUsage({}),
      finish: { usage: makeUsage({}) },
    });
    await store.saveSummary(scope, { sessionId: first.session.id, ...summary(4, 'fork through 4') });
    const second = await catalog.fork(scope, { sessionId: first.session.id });
    if (!second.ok) throw new Error(second.reason);
    expect(second.copied).toBe(2);
    expect(await store.summariesOf(scope, second.session.id)).toEqual([
      summary(2, 'through 2'),
      summary(4, 'fork through 4'),
    ]);
    // The source deleted (its nodes copied into its forks): the forks' summaries are their own rows.
    await catalog.deleteIdle(scope, [source.id]);
    expect(await store.summariesOf(scope, branch.session.id)).toHaveLength(2);

    // An export page carries them; an import of the page restores them.
    const page = (await catalog.exportPage(scope, { ids: [second.session.id] }, 10, null)).data[0]!;
    expect(page.summaries).toEqual(await store.summariesOf(scope, second.session.id));
  });

  it("search finds a fork's shared messages under the fork's ids, with the fork's own filters", async () => {
    const owner = await newTenant();
    const source = await catalog.importSession(
      owner,
      linear(['zebra one', 'plain', 'zebra two', 'other'], { userId: 'ann', metadata: { team: 'red' } }),
    );
    const mine = await catalog.fork(owner, { sessionId: source.id, nodeId: 3, metadata: { team: 'blue' } });
    const bobs = await catalog.fork(owner, { sessionId: source.id, nodeId: 1, userId: 'bob' });
    if (!mine.ok || !bobs.ok) throw new Error('fork refused');
    expect(await hitsOf(owner, 'zebra')).toEqual({
      [source.id]: [1, 3],
      [mine.session.id]: [1, 3],
      [bobs.session.id]: [1],
    });
    expect(await hitsOf(owner, 'two')).toEqual({ [source.id]: [3], [mine.session.id]: [3] });
    expect(await hitsOf(owner, 'other')).toEqual({ [source.id]: [4] });
    // The fork's row decides: its metadata, its user.
    expect(await hitsOf(owner, 'zebra', { metadata: { team: 'blue' } })).toEqual({
      [mine.session.id]: [1, 3],
    });
    expect(await hitsOf(owner, 'zebra', { userId: 'bob' })).toEqual({ [bobs.session.id]: [1] });
    expect(await hitsOf(userScope(owner.tenantId, 'bob'), 'zebra')).toEqual({ [bobs.session.id]: [1] });
    expect(await catalog.count(owner, { q: 'zebra', filter: {} })).toBe(3);
    expect(await catalog.count(owner, { q: 'zebra', filter: { userId: 'bob' } })).toBe(1);
    expect((await catalog.select(owner, { userId: 'bob' }, 10, 'zebra')).map((t) => t.id)).toEqual([
      bobs.session.id,
    ]);
    // The snippet is the fork's shared message.
    const hit = (
      await catalog.search(owner, { q: 'two', filter: { ids: [mine.session.id] }, limit: 5, cursor: null })
    ).data[0]!;
    expect(hit.snippet).toMatchObject({ nodeId: 3, text: 'zebra two' });
    // Another tenant sees nothing of it.
    expect(await hitsOf(await newTenant(), 'zebra')).toEqual({});
  });

  it('deleting the source (one, many, the retention sweep) keeps its forks whole and searchable', async () => {
    const owner = await newTenant();
    const old = new Date(Date.now() - 40 * 86_400_000);
    const roads: Array<[string, (id: string) => Promise<unknown>]> = [
      ['one', (id) => store.delete(owner, id)],
      ['many', (id) => catalog.deleteIdle(owner, [id])],
      [
        'retention',
        async (id) =>
          expect(
            await retention.expireBatch(owner.tenantId, { deleteAfterDays: 30, keep: 'none' }, 10),
          ).toEqual([id]),
      ],
    ];
    for (const [road, remove] of roads) {
      const source = await catalog.importSession(
        owner,
        linear([`walrus ${road}`, 'a1', `narwhal ${road}`, 'a2'], { updatedAt: old }),
      );
      const forks = [];
      for (const nodeId of [2, 4]) {
        const forked = await catalog.fork(owner, { sessionId: source.id, nodeId });
        if (!forked.ok) throw new Error(forked.reason);
        forks.push(forked.session.id);
      }
      await turn(owner, forks[1]!, `fresh ${road}`); // a fork with nodes of its own, under shared ones
      const before = await Promise.all(forks.map(async (id) => (await store.loadTree(owner, id))!));

      await remove(source.id);
      expect({ road, exists: await store.exists(owner, source.id) }).toEqual({ road, exists: false });
      for (const [i, id] of forks.entries()) {
        expect({ road, tree: await store.loadTree(owner, id) }).toEqual({ road, tree: before[i] });
        expect(await baseOf(owner, id)).toEqual({ sessionId: null, nodeIds: null });
        expect(await realNodes(owner, id)).toBe(before[i]!.nodes.length);
      }
      expect(await hitsOf(owner, `walrus ${road}`)).toEqual({ [forks[0]!]: [1], [forks[1]!]: [1] });
      expect(await hitsOf(owner, `narwhal ${road}`)).toEqual({ [forks[1]!]: [3] });
      expect(await hitsOf(owner, `fresh ${road}`)).toEqual({ [forks[1]!]: [5, 6] });
      // A fork of a materialized fork shares its (now real) nodes.
      const again = await catalog.fork(owner, { sessionId: forks[1]! });
      if (!again.ok) throw new Error(again.reason);
      expect(await baseOf(owner, again.session.id)).toEqual({
        sessionId: forks[1],
        nodeIds: [1, 2, 3, 4, 5, 6],
      });
      expect((await store.loadTree(owner, again.session.id))!.nodes).toEqual(before[1]!.nodes);
      await store.delete(owner, again.session.id);
    }
  });

  it('deleting a source with its forks in one statement deletes them all', async () => {
    const owner = await newTenant();
    const source = await catalog.importSession(owner, linear(['q', 'a']));
    const forked = await catalog.fork(owner, { sessionId: source.id });
    if (!forked.ok) throw new Error(forked.reason);
    const other = await catalog.fork(owner, { sessionId: source.id, nodeId: 1 });
    if (!other.ok) throw new Error(other.reason);
    expect((await catalog.deleteIdle(owner, [forked.session.id, source.id])).sort()).toEqual(
      [forked.session.id, source.id].sort(),
    );
    expect(await store.loadTree(owner, other.session.id)).toMatchObject({
      nodes: [{ id: 1, parentId: null }],
    });
    expect(await realNodes(owner, other.session.id)).toBe(1);
  });
});

describe('import', () => {
  it('stores the tree exactly, or nothing at all (a bad node rolls the session back)', async () => {
    const scope = await newTenant();
    const input = linear(['a', 'b', 'c'], {
      id: 'imported-1',
      createdAt: new Date('2020-01-02T03:04:05.678Z'),
      updatedAt: new Date('2021-01-01T00:00:00.000Z'),
    });
    const session = await catalog.importSession(scope, input);
    expect(session).toMatchObject({ id: 'imported-1', nextNodeId: 4, head: 3 });
    expect(session.createdAt.toISOString()).toBe('2020-01-02T03:04:05.678Z');
    expect(session.updatedAt.toISOString()).toBe('2021-01-01T00:00:00.000Z');
    expect((await store.loadTree(scope, 'imported-1'))!.nodes).toEqual(input.nodes);
    await expect(catalog.importSession(scope, input)).rejects.toMatchObject({ code: 'already_exists' });

    const broken = linear(['x', 'y'], { id: 'broken' });
    broken.nodes[1] = { ...broken.nodes[1]!, parentId: 7 };
    await expect(catalog.importSession(scope, broken)).rejects.toThrow();
    expect(await store.get(scope, 'broken')).toBeNull();
  });
});

describe('retention', () => {
  it('deletes idle sessions older than the policy in batches, keeping pinned ones when asked, never busy or paused', async () => {
    const scope = await newTenant();
    const other = await newTenant();
    const old = new Date(Date.now() - 40 * 86_400_000);
    const make = async (s: Scope, extra: Partial<ImportSessionInput> = {}) =>
      (await catalog.importSession(s, linear(['q', 'a'], { updatedAt: old, ...extra }))).id;
    const stale = [await make(scope), await make(scope), await make(scope)];
    const pinned = await make(scope, { pinned: true });
    const fresh = await make(scope, { updatedAt: new Date() });
    const busy = await make(scope);
    await db.withTenantSql(scope, (tx) =>
      tx.query(`UPDATE sessions SET status = 'busy', updated_at = $2 WHERE id = $1`, [busy, old]),
    );
    const paused = await make(scope);
    await db.withTenantSql(scope, (tx) =>
      tx.query(`UPDATE sessions SET status = 'paused', updated_at = $2 WHERE id = $1`, [paused, old]),
    );
    const othersOld = await make(other);

    expect(await tenants.detail(scope.tenantId)).toMatchObject({
      retention: { deleteAfterDays: null, keep: 'pinned' },
    });
    const policy = (
      await tenants.update(scope.tenantId, { retention: { deleteAfterDays: 30, keep: 'pinned' } })
    ).retention;
    expect((await retention.tenantsToSweep()).map((t) => t.tenantId)).toContain(scope.tenantId);
    expect((await retention.tenantsToSweep()).map((t) => t.tenantId)).not.toContain(other.tenantId);

    const first = await retention.expireBatch(scope.tenantId, policy, 2);
    const second = await retention.expireBatch(scope.tenantId, policy, 2);
    const third = await retention.expireBatch(scope.tenantId, policy, 2);
    expect(first).toHaveLength(2);
    expect([...first, ...second].sort()).toEqual([...stale].sort());
    expect(third).toEqual([]);
    for (const id of [pinned, fresh, busy, paused]) expect(await store.exists(scope, id)).toBe(true);
    expect(await store.exists(other, othersOld)).toBe(true);

    expect(await retention.expireBatch(scope.tenantId, { deleteAfterDays: 30, keep: 'none' }, 10)).toEqual([
      pinned,
    ]);
    await expect(tenants.update(randomUUID(), { retention: policy })).rejects.toMatchObject({
      code: 'not_found',
    });
  });
});

describe('staged imports', () => {
  const token = 'staged-import-token-0123';
  const other = 'another-import-token-0123';

  it('a staged session is hidden from every transaction but its import’s until published, its batches exact', async () => {
    const scope = await newTenant();
    const { nodes, ...head } = linear(['q1', 'a1', 'q2', 'a2', 'q3'], { id: 'staged' });
    const usage = sumUsage(nodes.map((n) => n.usage));
    const expires = new Date(Date.now() + 60_000);
    await catalog.stageImport(scope, head, usage, token, expires);
    const listed = async () => (await catalog.select(scope, {}, 100)).map((t) => t.id);
    expect(await listed()).toEqual([]);
    expect(await store.loadTree(scope, 'staged')).toBeNull();
    // Its id is taken meanwhile.
    await expect(catalog.importSession(scope, linear(['x'], { id: 'staged' }))).rejects.toMatchObject({
      code: 'already_exists',
    });
    // Batches: each node's parent in this batch or an earlier one; path usage summed across them.
    await catalog.addImportNodes(scope, 'staged', token, JSON.stringify(nodes.slice(0, 2)), 2, expires);
    await catalog.addImportNodes(scope, 'staged', token, JSON.stringify(nodes.slice(2)), 3, expires);
    // Another token neither sees nor writes it.
    await expect(
      catalog.addImportNodes(scope, 'staged', other, JSON.stringify([]), 0, expires),
    ).rejects.toMatchObject({ code: 'unavailable' });
    expect(await listed()).toEqual([]);
    const published = await catalog.publishImport(scope, 'staged', token, {});
    expect(published.id).toBe('staged');
    expect(await listed()).toEqual(['staged']);
    const loaded = await store.loadTree(scope, 'staged');
    expect(loaded!.nodes.map((n) => n.id)).toEqual([1, 2, 3, 4, 5]);
    // The path usage of the last node is the whole path's, as a whole-tree import stores it.
    const whole = await catalog.importSession(scope, linear(['q1', 'a1', 'q2', 'a2', 'q3'], { id: 'whole' }));
    const pathUsage = async (id: string) =>
      (
        await db.withTenantSql(scope, (tx) =>
          tx.query<{ path_usage: number[] }>(
            `SELECT path_usage FROM nodes WHERE tenant_id = $1::uuid AND session_id = $2 AND id = 5`,
            [scope.tenantId, id],
          ),
        )
      )[0]!.path_usage;
    expect(await pathUsage('staged')).toEqual(await pathUsage(whole.id));
  });

  it('a failed import is discarded; an abandoned one is found by the sweep once expired', async () => {
    const scope = await newTenant();
    const { nodes, ...head } = linear(['q1', 'a1', 'q2'], { id: 'failed' });
    const usage = sumUsage(nodes.map((n) => n.usage));
    await catalog.stageImport(scope, head, usage, token, new Date(Date.now() + 60_000));
    await catalog.addImportNodes(
      scope,
      'failed',
      token,
      JSON.stringify(nodes),
      3,
      new Date(Date.now() + 60_000),
    );
    await catalog.discardImport(scope, 'failed', token, 2);
    expect(await realNodes(scope, 'failed')).toBe(0);
    await catalog.stageImport(
      scope,
      { ...head, id: 'abandoned' },
      usage,
      other,
      new Date(Date.now() - 1_000),
    );
    const abandoned = (await catalog.abandonedImports(new Date(), 100)).filter(
      (a) => a.scope.tenantId === scope.tenantId,
    );
    expect(abandoned.map((a) => [a.id, a.token])).toEqual([['abandoned', other]]);
    await catalog.discardImport(abandoned[0]!.scope, 'abandoned', other, 100);
    expect(await catalog.abandonedImports(new Date(), 100)).not.toContainEqual(
      expect.objectContaining({ id: 'abandoned' }),
    );
    // Both ids are free again.
    await catalog.importSession(scope, linear(['x'], { id: 'failed' }));
    await catalog.importSession(scope, linear(['x'], { id: 'abandoned' }));
  });
});
