// The zero-configuration runtime: no DATABASE_URL, so the api runs on an embedded PGlite in its data directory,
// migrates it at boot, and finds it again (migrated, with its data) after a restart.

import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database, startEmbeddedPostgres } from '@canopy/store';
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
    const first = await startTestApp({ embeddedDataDir: dataDir });
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
