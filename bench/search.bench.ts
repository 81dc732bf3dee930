// Finding and forking conversations on the machine's Postgres (a database of its own, row-level security on):
//   search  full-text search over one tenant's 100,000 sessions / 1,000,000 messages, among three other tenants
//           (300,000 messages more), through the service's own query (SessionCatalogStore.search): p50 / p99 / max
//           at 1 and 10 concurrent queries, for words of every frequency, a phrase, `or`, and with a user filter;
//           and the plan, which must go through the GIN index on (tenant, words).
//   fork    a fork in one call (canopy_fork) from trees of 1,000 and 10,000 nodes (branchy: the active path is a few
//           hundred nodes) and from linear trees (a path of 1,000 / 10,000 nodes): time against path length, and
//           the nodes the fork copied (copy-on-write: none, it shares them). And a fork of a fork (its own nodes
//           after the shared ones are copied), and one whose nodes have no path usage (written before path usages
//           were kept: the fork sums the path's usages).
// CANOPY_BENCH_SEARCH_SESSIONS=<n> (or --search-sessions=<n>) seeds a smaller searched tenant (the fork trees stay
// the same); the quick run (`npm run bench`) seeds 10,000. Message words come from a skewed vocabulary (w0 most
// frequent ... w4999 rare), 12 per message. Targets: the words' plan goes through the index; a fork copies no node;
// a fork of a 10,000-node tree costs at most twice one of a 1,000-node tree (branchy trees: their paths are short).

import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { tenantScope, type Scope } from '../libs/core/src';
import { Database, SessionCatalogStore, declareSearch } from '../libs/store/src';
import { createTestDatabase, prepareTemplate, type TestDatabase } from '../libs/testing/src';
import { intOption, type OptionSource } from './lib/options';
import { summarise } from './lib/percentile';
import { formatTime, judge, printTable, ratio, type Verdict } from './lib/report';

const PER_SESSION = 10;
const OTHER_TENANTS = 3;
const POOL = 10;
/** A fork's p50 on the larger tree over its p50 on the smaller one ten times smaller: at most this. */
const FORK_GROWTH_TARGET = 2;

export interface SearchOptions {
  /** Sessions of the searched tenant; the three others have a tenth as many each. */
  sessions: number;
  /** Queries per stream: one stream alone, and each of 10 concurrent ones. */
  queries: { alone: number; concurrent: number };
  /** Forks timed per tree. */
  forks: number;
  /** Whether to time the fork over nodes without path usages too (no target reads it; ~15 s of forks). */
  withoutPathUsage: boolean;
}

export function searchOptions(from: OptionSource): SearchOptions {
  const { quick } = from;
  return {
    sessions: intOption(from, 'search', 'sessions', quick ? 10_000 : 100_000, [100, 10_000_000]),
    queries: quick ? { alone: 10, concurrent: 2 } : { alone: 40, concurrent: 8 },
    forks: quick ? 20 : 50,
    withoutPathUsage: !quick,
  };
}

interface Row {
  name: string;
  concurrency: number;
  queries: number;
  hits: number;
  p50: number;
  p99: number;
  max: number;
}

export interface SearchBenchResult {
  sessions: number;
  otherSessions: number;
  seedSeconds: number;
  planUsesIndex: boolean;
  forksPerTree: number;
  messages: number;
  rows: Row[];
  plan: string;
  forks: Array<{
    tree: string;
    nodes: number;
    path: number;
    copied: number;
    p50: number;
    p99: number;
    max: number;
  }>;
}

export async function runSearchBench(options: SearchOptions): Promise<SearchBenchResult> {
  const { sessions } = options;
  const otherSessions = Math.ceil(sessions / 10);
  await prepareTemplate();
  const testDb = await createTestDatabase();
  const db = new Database({ url: testDb.url, poolMax: POOL, txMaxWaitMs: 30_000, txTimeoutMs: 120_000 });
  const catalog = new SessionCatalogStore(db);
  try {
    const started = performance.now();
    const target = await seedTenant(testDb, sessions);
    for (let i = 0; i < OTHER_TENANTS; i++) await seedTenant(testDb, otherSessions);
    await raw(testDb, (c) => c.query('ANALYZE'));
    const seedSeconds = (performance.now() - started) / 1000;

    const plan = await db.withTenantSql(target, async (tx) => {
      await declareSearch(tx, 'w2000');
      const rows = await tx.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT node_id FROM node_search WHERE tenant_id = $1::uuid AND search @@ canopy_search_query()`,
        [target.tenantId],
      );
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });

    const cases: Array<{ name: string; q: string; filter?: Record<string, unknown> }> = [
      { name: 'rare word (w4990)', q: 'w4990' },
      { name: 'uncommon word (w1500)', q: 'w1500' },
      { name: 'common word (w200)', q: 'w200' },
      { name: 'frequent word (w20)', q: 'w20' },
      { name: 'phrase "deploy the api"', q: '"deploy the api"' },
      { name: 'w3000 or w3001 -w1', q: 'w3000 or w3001 -w1' },
      { name: 'w200, one user', q: 'w200', filter: { userId: 'user-7' } },
      { name: 'w200, metadata team', q: 'w200', filter: { metadata: { team: 't3' } } },
    ];
    const rows: Row[] = [];
    for (const c of cases) {
      for (const concurrency of [1, 10]) {
        rows.push(await measure(catalog, target, c, concurrency, options));
      }
    }
    const forks = await benchForks(catalog, testDb, options);
    return {
      sessions,
      otherSessions,
      seedSeconds,
      planUsesIndex: plan.includes('node_search_idx'),
      forksPerTree: options.forks,
      messages: sessions * PER_SESSION,
      rows,
      plan,
      forks,
    };
  } finally {
    await db.disconnect();
    await testDb.drop();
  }
}

async function measure(
  catalog: SessionCatalogStore,
  scope: Scope,
  c: { name: string; q: string; filter?: Record<string, unknown> },
  concurrency: number,
  options: SearchOptions,
): Promise<Row> {
  const perWorker = concurrency === 1 ? options.queries.alone : options.queries.concurrent;
  // Warm-up: the index and heap pages of this word.
  await catalog.search(scope, { q: c.q, filter: c.filter ?? {}, limit: 20, cursor: null });
  const times: number[] = [];
  let hits = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = 0; i < perWorker; i++) {
        const t0 = performance.now();
        const page = await catalog.search(scope, { q: c.q, filter: c.filter ?? {}, limit: 20, cursor: null });
        times.push(performance.now() - t0);
        hits = page.data.length;
      }
    }),
  );
  const { p50, p99, max } = summarise(times);
  return { name: c.name, concurrency, queries: times.length, hits, p50, p99, max };
}

/** A tenant with `sessions` sessions of PER_SESSION messages each, written in large statements as the test role. */
async function seedTenant(testDb: TestDatabase, sessions: number): Promise<Scope> {
  const tenantId = randomUUID();
  await raw(testDb, async (c) => {
    await c.query(`SELECT set_config('canopy.tenant_id', $1, false)`, [tenantId]);
    await c.query(`INSERT INTO tenants (id, name) VALUES ($1::uuid, 'bench ' || $1::text)`, [tenantId]);
    await c.query(
      `INSERT INTO sessions (tenant_id, id, user_id, model, metadata, path, head, next_node_id, updated_at)
       SELECT $1::uuid, 's' || g, 'user-' || (g % 100), 'mock:echo', jsonb_build_object('team', 't' || (g % 10)),
              ARRAY(SELECT generate_series(1, ${PER_SESSION})), ${PER_SESSION}, ${PER_SESSION + 1},
              now() - g * interval '1 second'
         FROM generate_series(0, $2::int - 1) g`,
      [tenantId, sessions],
    );
    const chunk = 50_000;
    for (let from = 0; from < sessions * PER_SESSION; from += chunk) {
      await c.query(
        `INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message)
         SELECT $1::uuid, 's' || (g / ${PER_SESSION}), g % ${PER_SESSION} + 1, NULLIF(g % ${PER_SESSION}, 0),
                (CASE WHEN g % 2 = 0 THEN 'user' ELSE 'assistant' END)::message_role,
                jsonb_build_object('role', CASE WHEN g % 2 = 0 THEN 'user' ELSE 'assistant' END, 'timestamp', 0,
                  'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text',
                    (SELECT string_agg('w' || floor(power(random(), 3) * 5000)::int, ' ')
                       FROM generate_series(1, 12 + 0 * g))
                    || CASE WHEN g % 997 = 0 THEN ' deploy the api' ELSE '' END)))
           FROM generate_series($2::int, $3::int - 1) g`,
        [tenantId, from, Math.min(from + chunk, sessions * PER_SESSION)],
      );
    }
  });
  return tenantScope(tenantId);
}

async function benchForks(catalog: SessionCatalogStore, testDb: TestDatabase, options: SearchOptions) {
  const scope = tenantScope(randomUUID());
  const time = (tree: string, nodes: number, sessionId: string) =>
    timeForks(catalog, scope, { tree, nodes, sessionId, forks: options.forks });
  await raw(testDb, async (c) => {
    await c.query(`SELECT set_config('canopy.tenant_id', $1, false)`, [scope.tenantId]);
    await c.query(`INSERT INTO tenants (id, name) VALUES ($1::uuid, 'forks')`, [scope.tenantId]);
  });
  const trees: Array<{ tree: string; nodes: number; branchEvery: number }> = [
    { tree: 'branchy', nodes: 1_000, branchEvery: 40 },
    { tree: 'branchy', nodes: 10_000, branchEvery: 40 },
    { tree: 'linear', nodes: 1_000, branchEvery: 0 },
    { tree: 'linear', nodes: 10_000, branchEvery: 0 },
  ];
  // The seeding walks each tree up from its head (its path) and down from its root (its path usages), one step per
  // level: a linear 10,000-node tree takes 10,000 steps, and a step that reads every node of the tree (as planned
  // before the new nodes are analyzed) makes a walk last a minute. Each tree is analyzed before its walks, and the
  // walk down finds children through a temporary index on the parent (the schema has none: nothing it serves reads
  // nodes by parent), dropped before any fork is timed.
  await raw(testDb, (c) =>
    c.query('CREATE INDEX bench_nodes_parent_idx ON nodes (tenant_id, session_id, parent_id)'),
  );
  for (const spec of trees) {
    const id = `${spec.tree}-${spec.nodes}`;
    // Branchy: every node's parent is one of the last `branchEvery` nodes (many regenerations and edits); the
    // active path follows parent pointers up from the newest node.
    await raw(testDb, async (c) => {
      await c.query(`SELECT set_config('canopy.tenant_id', $1, false)`, [scope.tenantId]);
      await c.query(`INSERT INTO sessions (tenant_id, id, model) VALUES ($1::uuid, $2, 'mock:echo')`, [
        scope.tenantId,
        id,
      ]);
      await c.query(
        `INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage)
         SELECT $1::uuid, $2, g, CASE WHEN g = 1 THEN NULL WHEN $4::int = 0 THEN g - 1
                                      ELSE greatest(1, g - 1 - (hashint4(g) & 2147483647) % $4::int) END,
                (CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END)::message_role,
                jsonb_build_object('role', CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END, 'timestamp', 0,
                  'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'message number ' || g))),
                jsonb_build_object('inputTokens', g, 'outputTokens', 1)
           FROM generate_series(1, $3::int) g`,
        [scope.tenantId, id, spec.nodes, spec.branchEvery],
      );
      await c.query('ANALYZE nodes');
      await c.query(
        `WITH RECURSIVE up AS (SELECT id, parent_id FROM nodes WHERE tenant_id = $1 AND session_id = $2 AND id = $3
                               UNION ALL
                               SELECT n.id, n.parent_id FROM up JOIN nodes n
                                 ON n.tenant_id = $1 AND n.session_id = $2 AND n.id = up.parent_id)
         UPDATE sessions SET path = (SELECT array_agg(id ORDER BY id) FROM up), head = $3, next_node_id = $3 + 1
          WHERE tenant_id = $1 AND id = $2`,
        [scope.tenantId, id, spec.nodes],
      );
      // Each node's path usage, as commits and imports store it (the sum root -> node: a fork's usage).
      await c.query(
        `WITH RECURSIVE walk AS (
             SELECT id, canopy_usage_vector(usage) AS path_usage FROM nodes
              WHERE tenant_id = $1 AND session_id = $2 AND parent_id IS NULL
             UNION ALL
             SELECT n.id, canopy_path_usage(walk.path_usage, n.usage) FROM walk JOIN nodes n
               ON n.tenant_id = $1 AND n.session_id = $2 AND n.parent_id = walk.id)
         UPDATE nodes SET path_usage = walk.path_usage FROM walk
          WHERE nodes.tenant_id = $1 AND nodes.session_id = $2 AND nodes.id = walk.id`,
        [scope.tenantId, id],
      );
    });
  }
  await raw(testDb, async (c) => {
    await c.query('DROP INDEX bench_nodes_parent_idx');
    await c.query('ANALYZE nodes');
  });
  const out = [];
  for (const spec of trees) out.push(await time(spec.tree, spec.nodes, `${spec.tree}-${spec.nodes}`));
  // A fork of a fork: the linear 10,000-node tree forked at its tip, then that fork (after 2 nodes of its own,
  // which the fork of it copies) forked again.
  const first = await catalog.fork(scope, { sessionId: 'linear-10000' });
  if (!first.ok) throw new Error(`fork: ${first.reason}`);
  await raw(testDb, async (c) => {
    await c.query(`SELECT set_config('canopy.tenant_id', $1, false)`, [scope.tenantId]);
    for (const g of [10_001, 10_002]) {
      // One at a time: each one's path usage is its parent's (the first one's parent is shared).
      await c.query(
        `INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, path_usage)
         SELECT $1::uuid, $2, $3::int, $3::int - 1, 'user',
                jsonb_build_object('role', 'user', 'timestamp', 0,
                  'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'own ' || $3::int))),
                canopy_path_usage((SELECT path_usage FROM canopy_session_nodes($1::uuid, $2, ARRAY[$3::int - 1])), NULL)`,
        [scope.tenantId, first.session.id, g],
      );
    }
    await c.query(
      `UPDATE sessions SET path = path || ARRAY[10001, 10002], head = 10002, next_node_id = 10003
        WHERE tenant_id = $1 AND id = $2`,
      [scope.tenantId, first.session.id],
    );
  });
  out.push(await time('fork of linear', 10_002, first.session.id));
  if (!options.withoutPathUsage) return out;
  // Nodes without path usages (written before they existed): the fork sums the path's usages instead.
  await raw(testDb, async (c) => {
    await c.query(`SELECT set_config('canopy.tenant_id', $1, false)`, [scope.tenantId]);
    await c.query(`UPDATE nodes SET path_usage = NULL WHERE tenant_id = $1 AND session_id = 'linear-10000'`, [
      scope.tenantId,
    ]);
  });
  out.push(await time('linear, usage summed', 10_000, 'linear-10000'));
  return out;
}

async function timeForks(
  catalog: SessionCatalogStore,
  scope: Scope,
  { tree, nodes, sessionId, forks }: { tree: string; nodes: number; sessionId: string; forks: number },
): Promise<SearchBenchResult['forks'][number]> {
  const times: number[] = [];
  let path = 0;
  let copied = 0;
  for (let i = 0; i < forks; i++) {
    const t0 = performance.now();
    const forked = await catalog.fork(scope, { sessionId });
    times.push(performance.now() - t0);
    if (!forked.ok) throw new Error(`fork of ${sessionId}: ${forked.reason}`);
    path = forked.session.path.length;
    copied = forked.copied;
  }
  const { p50, p99, max } = summarise(times);
  return { tree, nodes, path, copied, p50, p99, max };
}

async function raw<T>(testDb: TestDatabase, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: testDb.url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export function printSearchReport(title: string, r: SearchBenchResult): void {
  console.log(
    `\n${title}\n${r.sessions.toLocaleString('en')} sessions / ${r.messages.toLocaleString('en')} messages in the searched tenant, ` +
      `${OTHER_TENANTS} other tenants with ${(r.otherSessions * PER_SESSION).toLocaleString('en')} messages each; ` +
      `seeded in ${r.seedSeconds.toFixed(0)} s. Plan of the words:\n${r.plan}`,
  );
  printTable(
    'search (first page of 20, ranked, with snippets)',
    ['query', 'concurrent', 'queries', 'hits', 'p50', 'p99', 'max'],
    r.rows.map((row) => [
      row.name,
      String(row.concurrency),
      String(row.queries),
      String(row.hits),
      formatTime(row.p50),
      formatTime(row.p99),
      formatTime(row.max),
    ]),
    new Set([1, 2, 3, 4, 5, 6]),
  );
  printTable(
    `fork (one canopy_fork call; ${r.forksPerTree} forks of the active tip each)`,
    ['tree', 'nodes', 'path', 'copied', 'p50', 'p99', 'max', 'p50 per path node'],
    r.forks.map((f) => [
      f.tree,
      f.nodes.toLocaleString('en'),
      String(f.path),
      String(f.copied),
      formatTime(f.p50),
      formatTime(f.p99),
      formatTime(f.max),
      `${((f.p50 * 1000) / Math.max(1, f.path)).toFixed(1)} us`,
    ]),
    new Set([1, 2, 3, 4, 5, 6, 7]),
  );
}

/**
 * The targets: the words' plan goes through the GIN index; the forks of the plain trees copy no node (copy-on-write);
 * a fork's p50 on the 10,000-node branchy tree at most FORK_GROWTH_TARGET times its p50 on the 1,000-node one.
 */
export function searchVerdicts(r: SearchBenchResult): Verdict[] {
  const section = 'search';
  const plain = r.forks.filter((f) => f.tree === 'branchy' || f.tree === 'linear');
  const small = r.forks.find((f) => f.tree === 'branchy' && f.nodes === 1_000);
  const large = r.forks.find((f) => f.tree === 'branchy' && f.nodes === 10_000);
  return [
    judge(section, 'plans of the words not through node_search_idx = 0', {
      value: r.planUsesIndex ? 0 : 1,
      limit: 0,
      kind: 'max',
      format: String,
      spread: `${r.sessions.toLocaleString('en')} sessions searched`,
    }),
    judge(section, 'nodes copied by a fork of the 1,000/10,000-node trees = 0', {
      value: plain.reduce((n, f) => n + f.copied, 0),
      limit: 0,
      kind: 'max',
      format: String,
      spread: `${plain.length} trees x ${r.forksPerTree} forks`,
    }),
    judge(section, `fork p50, 10,000-node tree <= ${FORK_GROWTH_TARGET}x a 1,000-node tree (branchy)`, {
      value: large && small ? large.p50 / small.p50 : Number.NaN,
      limit: FORK_GROWTH_TARGET,
      kind: 'max',
      format: ratio,
      spread:
        large && small
          ? `p50/p99 ${formatTime(small.p50)}/${formatTime(small.p99)} -> ${formatTime(large.p50)}/${formatTime(large.p99)}`
          : '-',
    }),
  ];
}
