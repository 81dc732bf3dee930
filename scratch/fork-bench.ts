import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { tenantScope } from '../libs/core/src';
import { Database, SessionCatalogStore } from '../libs/store/src';
import { createTestDatabase, prepareTemplate } from '../libs/testing/src';
async function main() {
  await prepareTemplate();
  const testDb = await createTestDatabase();
  const db = new Database({ url: testDb.url, poolMax: 4, txMaxWaitMs: 5000, txTimeoutMs: 20000 } as never);
  const catalog = new SessionCatalogStore(db);
  const scope = tenantScope(randomUUID());
  const c = new Client({ connectionString: testDb.url });
  await c.connect();
  await c.query(`SELECT set_config('canopy.tenant_id', $1, false)`, [scope.tenantId]);
  await c.query(`INSERT INTO tenants (id, name) VALUES ($1::uuid, 'forks')`, [scope.tenantId]);
  for (const [id, n, b] of [['branchy-1000', 1000, 40], ['branchy-10000', 10000, 40], ['linear-10000', 10000, 0]] as const) {
    await c.query(`INSERT INTO sessions (tenant_id, id, model) VALUES ($1::uuid, $2, 'mock:echo')`, [scope.tenantId, id]);
    await c.query(
      `INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage)
       SELECT $1::uuid, $2, g, CASE WHEN g = 1 THEN NULL WHEN $4::int = 0 THEN g - 1
                                    ELSE greatest(1, g - 1 - (hashint4(g) & 2147483647) % $4::int) END,
              (CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END)::message_role,
              jsonb_build_object('role', CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END, 'timestamp', 0,
                'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'message number ' || g))),
              jsonb_build_object('inputTokens', g, 'outputTokens', 1)
         FROM generate_series(1, $3::int) g`, [scope.tenantId, id, n, b]);
    await c.query(
      `WITH RECURSIVE up AS (SELECT id, parent_id FROM nodes WHERE tenant_id = $1 AND session_id = $2 AND id = $3
                             UNION ALL
                             SELECT n.id, n.parent_id FROM up JOIN nodes n
                               ON n.tenant_id = $1 AND n.session_id = $2 AND n.id = up.parent_id)
       UPDATE sessions SET path = (SELECT array_agg(id ORDER BY id) FROM up), head = $3, next_node_id = $3 + 1
        WHERE tenant_id = $1 AND id = $2`, [scope.tenantId, id, n]);
    await c.query(
      `WITH RECURSIVE walk AS (
           SELECT id, canopy_usage_vector(usage) AS path_usage FROM nodes
            WHERE tenant_id = $1 AND session_id = $2 AND parent_id IS NULL
           UNION ALL
           SELECT n.id, canopy_path_usage(walk.path_usage, n.usage) FROM walk JOIN nodes n
             ON n.tenant_id = $1 AND n.session_id = $2 AND n.parent_id = walk.id)
       UPDATE nodes SET path_usage = walk.path_usage FROM walk
        WHERE nodes.tenant_id = $1 AND nodes.session_id = $2 AND nodes.id = walk.id`, [scope.tenantId, id]);
    await c.query('ANALYZE nodes');
    const times: number[] = [];
    for (let i = 0; i < 30; i++) {
      const t0 = performance.now();
      const r = await catalog.fork(scope, { sessionId: id });
      times.push(performance.now() - t0);
      if (!r.ok) throw new Error(r.reason);
    }
    console.log(id, times.map((t) => t.toFixed(1)).join(' '));
  }
  console.log(testDb.url);
  await c.end();
  await db.disconnect();
}
void main();
