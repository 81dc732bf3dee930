// The zero-configuration runtime: no DATABASE_URL, so the api runs on an embedded PGlite in its data directory,
// migrates it at boot, and finds it again (migrated, with its data) after a restart.

import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyUsage, tenantScope, userMessage } from '@canopy/core';
import { Database, SESSION_STORE, startEmbeddedPostgres, type SessionStore } from '@canopy/store';
import { startTestApp } from './support/test-app';

let dataDir: string;

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'canopy-embedded-'));
});

afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the embedded database', () => {
  it('boots with no database configured, serves readiness, and keeps its data across restarts', async () => {
    const tenantId = '6f1c1a52-5a43-4b8e-9a0e-0d5c0f6b1f11';
    const first = await startTestApp({ embeddedDataDir: dataDir, freshEmbedded: true });
    try {
      expect(first.config.database.url).toBeNull();
      expect(existsSync(join(dataDir, 'pgdata'))).toBe(true);
      const ready = await fetch(`${first.url}/readyz`);
      expect(ready.status).toBe(200);
      const db = first.app.get(Database);
      await db.withTenant({ tenantId }, (tx) => tx.tenant.create({ data: { id: tenantId, name: 'kept' } }));
    } finally {
      await first.close();
    }

    const second = await startTestApp({ embeddedDataDir: dataDir });
    try {
      const db = second.app.get(Database);
      const tenant = await db.withTenant({ tenantId }, (tx) =>
        tx.tenant.findUnique({ where: { id: tenantId } }),
      );
      expect(tenant?.name).toBe('kept');
      // Row-level security holds in the embedded database too: another tenant sees nothing.
      const other = await db.withTenant({ tenantId: '00000000-0000-4000-8000-000000000000' }, (tx) =>
        tx.tenant.count(),
      );
      expect(other).toBe(0);
    } finally {
      await second.close();
    }
  });

  it("runs the session store's raw-SQL transactions on its single connection, isolated per tenant", async () => {
    const t = await startTestApp({ embeddedDataDir: dataDir });
    try {
      const db = t.app.get(Database);
      const store = t.app.get<SessionStore>(SESSION_STORE);
      const tenantId = 'a7d0b7a4-3c1e-4f43-9d55-3f1f0c1e2b01';
      await db.withTenantSql({ tenantId }, (tx) =>
        tx.query('INSERT INTO tenants (id, name) VALUES ($1::uuid, $2) ON CONFLICT DO NOTHING', [
          tenantId,
          'sql',
        ]),
      );
      const scope = tenantScope(tenantId);
      await store.create(scope, { id: 'embedded', model: 'mock:echo' });
      const started = await store.startRun(scope, {
        sessionId: 'embedded',
        kind: 'prompt',
        input: { content: 'hi' },
        status: 'queued',
      });
      if (!started.ok) throw new Error(`startRun refused: ${started.reason}`);
      const context = await store.loadRun(scope, 'embedded', started.run.id);
      expect(context?.run).toMatchObject({ status: 'running', attempts: 1 });
      expect(await store.stageSteer(scope, 'embedded', { content: 'more' })).toEqual({
        runId: started.run.id,
      });
      const commit = {
        sessionId: 'embedded',
        runId: started.run.id,
        nodes: [{ id: 1, parentId: null, message: userMessage('hi', 1), usage: null }],
        position: { path: [1], cursors: {}, head: 1 },
        nextNodeId: 2,
        usage: emptyUsage(),
        finish: { usage: emptyUsage() },
      };
      // The steer comes back with who sent it (a scope made in code acts as the admin).
      expect(await store.commit(scope, commit)).toEqual({
        status: 'ok',
        steer: { content: 'more', actor: { type: 'admin' } },
        titled: false,
        queued: false,
      });
      expect(await store.commit(scope, { ...commit, nodes: [] })).toEqual({
        status: 'ok',
        steer: null,
        titled: false,
        queued: false,
      });
      expect(await store.get(scope, 'embedded')).toMatchObject({ status: 'idle', path: [1] });
      // Another tenant sees nothing, on the very connection the store just used.
      const [seen] = await db.withTenantSql({ tenantId: '00000000-0000-4000-8000-000000000000' }, (tx) =>
        tx.query<{ n: number }>(
          'SELECT (SELECT count(*) FROM sessions)::int + (SELECT count(*) FROM runs)::int AS n',
        ),
      );
      expect(seen?.n).toBe(0);
      expect(await store.get(tenantScope('00000000-0000-4000-8000-000000000000'), 'embedded')).toBeNull();
    } finally {
      await t.close();
    }
  });

  it('refuses a second database on the same data directory while the first holds it', async () => {
    const first = await startTestApp({ embeddedDataDir: dataDir });
    try {
      expect(existsSync(join(dataDir, 'embedded.lock'))).toBe(true);
      await expect(startEmbeddedPostgres(dataDir)).rejects.toThrow(/is in use by process \d+/);
    } finally {
      await first.close();
    }
    expect(existsSync(join(dataDir, 'embedded.lock'))).toBe(false);
  });
});
