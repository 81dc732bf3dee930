// The hot path's functions run their statements on generic plans, planned once per connection instead of at every
// call (their plan_cache_mode setting). auto_explain, loaded in a superuser session of a test
// database and sending its output to the client, shows the plan of each statement a function runs: a custom plan
// carries the call's values as constants ('plan-probe'::text), a generic plan its parameters ($1). Postgres makes
// custom plans for at least a statement's first five executions unless told otherwise, so the first call tells.

import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { adminUrl, createTestDatabase, type TestDatabase } from '@canopy/testing';

let testDb: TestDatabase;
let client: Client;
const tenant = randomUUID();
const SESSION = 'plan-probe';
/** The functions the migration sets, and their argument types (ALTER FUNCTION names them so). */
const HOT_FUNCTIONS = {
  canopy_start_run:
    'uuid, text, text, uuid, run_kind, jsonb, run_status, jsonb, jsonb, integer, integer, jsonb',
  canopy_commit: 'uuid, text, text, uuid, jsonb, jsonb, integer, jsonb, jsonb, integer, text',
  canopy_load_run: 'uuid, text, text, uuid, integer, integer',
  canopy_create_session: 'uuid, text, text, text, text, text, jsonb, jsonb, jsonb, integer, integer',
  canopy_load_tree: 'uuid, text, text, integer',
} as const;

/** The plans auto_explain sent for the statements the calls ran inside functions (each notice: one plan). */
let plans: string[] = [];

beforeAll(async () => {
  testDb = await createTestDatabase();
  const url = new URL(adminUrl());
  url.pathname = `/${testDb.name}`;
  client = new Client({ connectionString: url.toString() });
  await client.connect();
  client.on('notice', (notice) => {
    const message = notice.message ?? '';
    if (/Query Text:/.test(message)) plans.push(message);
  });
  await client.query(`INSERT INTO tenants (id, name) VALUES ($1::uuid, 'plans')`, [tenant]);
  await client.query("LOAD 'auto_explain'");
  await client.query('SET auto_explain.log_min_duration = 0');
  await client.query('SET auto_explain.log_nested_statements = on');
  await client.query('SET auto_explain.log_level = notice');
  await client.query('SET client_min_messages = notice');
});

afterAll(async () => {
  await client?.end();
  await testDb?.drop();
});

/**
 * A session, one run (start, load, commit of a two-node turn), and the session's tree read back: the plans of what
 * the functions ran inside.
 */
async function oneTurn(): Promise<{ nested: string[] }> {
  plans = [];
  const session = `${SESSION}-${randomUUID()}`;
  const run = randomUUID();
  await client.query(
    `SELECT * FROM canopy_create_session($1::uuid, $2, NULL, NULL, 'mock:echo', NULL, '{}', '[]', '{}', NULL, 5000)`,
    [tenant, session],
  );
  const started = await client.query<{ outcome: string }>(
    `SELECT outcome FROM canopy_start_run($1::uuid, NULL, $2, $3::uuid, 'prompt', '{"content":"hi"}', 'queued',
                                          NULL, NULL, 5000, NULL, '{"type":"system"}')`,
    [tenant, session, run],
  );
  expect(started.rows[0]!.outcome).toBe('ok');
  const loaded = await client.query<{ run: unknown }>(
    `SELECT run FROM canopy_load_run($1::uuid, NULL, $2, $3::uuid, 5000, NULL)`,
    [tenant, session, run],
  );
  expect(loaded.rows[0]!.run).not.toBeNull();
  const text = (role: string, words: string) => ({ role, content: [{ type: 'text', text: words }] });
  const nodes = [
    { id: 1, parentId: null, message: text('user', 'hi'), usage: {} },
    { id: 2, parentId: 1, message: text('assistant', 'hello there'), usage: { outputTokens: 2 } },
  ];
  const committed = await client.query<{ outcome: string }>(
    `SELECT outcome FROM canopy_commit($1::uuid, NULL, $2, $3::uuid, $4::jsonb, $5::jsonb, 3, '{}', '{}', 5000, 'title')`,
    [tenant, session, run, JSON.stringify(nodes), JSON.stringify({ path: [1, 2], cursors: {}, head: 2 })],
  );
  expect(committed.rows[0]!.outcome).toBe('ok');
  const tree = await client.query<{ nodes: unknown[] }>(
    `SELECT nodes FROM canopy_load_tree($1::uuid, NULL, $2, 5000)`,
    [tenant, session],
  );
  expect(tree.rows[0]!.nodes).toHaveLength(2);
  // The calls themselves (top level) name the session as a parameter of their own: only nested statements count.
  return { nested: plans.filter((p) => !/Query Text: SELECT (\*|outcome|run|nodes) FROM canopy_/.test(p)) };
}

/** The nested plans that carry this call's session id as a constant: each one planned for this call alone. */
const customPlans = (nested: string[]) => nested.filter((p) => p.includes(`'${SESSION}-`));

describe('the hot path functions', () => {
  it('plan their statements as generic plans from the first call on', async () => {
    const { nested } = await oneTurn();
    // The functions' own statements and their triggers' (the session fence, the nodes, the run, the usage roll-up).
    expect(nested.length).toBeGreaterThanOrEqual(10);
    expect(nested.some((p) => /FROM sessions/i.test(p) && /\$\d/.test(p))).toBe(true);
    expect(customPlans(nested)).toEqual([]);
  });

  it('would plan them for every call without the setting (the same probe sees it)', async () => {
    await client.query('BEGIN');
    try {
      for (const [name, args] of Object.entries(HOT_FUNCTIONS)) {
        await client.query(`ALTER FUNCTION ${name}(${args}) RESET plan_cache_mode`);
      }
      const { nested } = await oneTurn();
      expect(customPlans(nested).length).toBeGreaterThan(0);
    } finally {
      await client.query('ROLLBACK');
    }
  });
});
