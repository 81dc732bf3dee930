// The retention sweep against the real Postgres: it deletes what imports whose process died left staged (hidden,
// never published), in batches, says so in the log and announces nothing; an import still in flight (its expiry
// ahead) is left alone and publishes as usual.

import { randomBytes, randomUUID } from 'node:crypto';
import {
  assistantMessage,
  makeUsage,
  sumUsage,
  tenantScope,
  userMessage,
  type ActivityEvent,
  type Scope,
  type TreeNode,
} from '@canopy/core';
import { InProcessRunControl } from '@canopy/queue';
import { InProcessActivityFeed, InProcessEventBus } from '@canopy/realtime';
import { Database, SessionCatalogStore, type ImportSessionHead } from '@canopy/store';
import { RetentionRepository } from '@canopy/tenancy';
import { createTestDatabase, type TestDatabase } from '@canopy/testing';
import { RetentionSweeper } from './retention-sweeper';

let testDb: TestDatabase;
let db: Database;
let catalog: SessionCatalogStore;
let feed: InProcessActivityFeed;
let sweeper: RetentionSweeper;
const warnings: Array<{ message: string; context?: Record<string, unknown> }> = [];
const announced: ActivityEvent[] = [];

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = new Database({ url: testDb.url, poolMax: 2, txMaxWaitMs: 5_000, txTimeoutMs: 15_000 });
  catalog = new SessionCatalogStore(db);
  feed = new InProcessActivityFeed();
  await feed.subscribe(null, (event) => announced.push(event));
  sweeper = new RetentionSweeper(
    new RetentionRepository(db),
    feed,
    new InProcessEventBus({ replayLimit: 100 }),
    new InProcessRunControl(),
    {
      info: () => undefined,
      warn: (message, context) => warnings.push({ message, context }),
      error: (message, context) => {
        throw new Error(`unexpected error log: ${message} ${JSON.stringify(context)}`);
      },
    },
    // Two nodes per delete: a three-node import takes more than one.
    2,
    catalog,
  );
});

afterAll(async () => {
  await feed?.close();
  await db?.disconnect();
  await testDb?.drop();
});

async function newTenant(): Promise<Scope> {
  const id = randomUUID();
  await db.withTenantSql({ tenantId: id }, (tx) =>
    tx.query(`INSERT INTO tenants (id, name) VALUES ($1::uuid, $2)`, [id, `sweep-${id.slice(0, 8)}`]),
  );
  return tenantScope(id);
}

/** A staged import of three nodes under `id`, its expiry `expiresInMs` from now (negative: already past). */
async function stage(
  scope: Scope,
  id: string,
  expiresInMs: number,
): Promise<{ token: string; nodes: TreeNode[] }> {
  const nodes: TreeNode[] = ['q1', 'a1', 'q2'].map((text, i) => ({
    id: i + 1,
    parentId: i === 0 ? null : i,
    message: i % 2 === 0 ? userMessage(text, 1_000 + i) : assistantMessage(text, 1_000 + i),
    usage: i % 2 === 1 ? makeUsage({ inputTokens: 1, outputTokens: 2 }) : null,
  }));
  const head: ImportSessionHead = {
    id,
    title: null,
    model: 'mock:echo',
    system: null,
    opts: {},
    tools: [],
    metadata: {},
    userId: null,
    pinned: false,
    position: { path: [1, 2, 3], cursors: { '1': 2, '2': 3 }, head: 3 },
    nextNodeId: 4,
  };
  const token = randomBytes(18).toString('base64url');
  const expiresAt = new Date(Date.now() + expiresInMs);
  await catalog.stageImport(scope, head, sumUsage(nodes.map((n) => n.usage)), token, expiresAt);
  await catalog.addImportNodes(scope, id, token, JSON.stringify(nodes), nodes.length, null);
  return { token, nodes };
}

/** Rows of `nodes` under the session, whoever may see it (the admin road: staged sessions are hidden otherwise). */
async function nodeRows(scope: Scope, id: string): Promise<number> {
  const [row] = await db.withAdminSql('count a staged import', (tx) =>
    tx.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM nodes WHERE tenant_id = $1::uuid AND session_id = $2`,
      [scope.tenantId, id],
    ),
  );
  return row!.n;
}

describe('the retention sweep and staged imports', () => {
  it('discards an abandoned import whole, logs it, announces nothing; leaves one in flight to publish', async () => {
    const scope = await newTenant();
    await stage(scope, 'abandoned', -1_000);
    const live = await stage(scope, 'in-flight', 60_000);
    expect(await nodeRows(scope, 'abandoned')).toBe(3);

    await sweeper.sweep();

    expect(await nodeRows(scope, 'abandoned')).toBe(0);
    expect(await catalog.abandonedImports(new Date(), 100)).not.toContainEqual(
      expect.objectContaining({ id: 'abandoned' }),
    );
    expect(warnings).toContainEqual({
      message: 'discarded an abandoned import',
      context: { tenantId: scope.tenantId, sessionId: 'abandoned' },
    });
    expect(announced.filter((e) => e.tenantId === scope.tenantId)).toEqual([]);
    // Its id is free again: the same conversation imports anew.
    const { token: again } = await stage(scope, 'abandoned', 60_000);
    await catalog.publishImport(scope, 'abandoned', again, {});

    // The import still in flight was left whole and publishes as usual.
    expect(await nodeRows(scope, 'in-flight')).toBe(3);
    const published = await catalog.publishImport(scope, 'in-flight', live.token, {});
    expect(published.id).toBe('in-flight');
  });
});
