// The FileStorage contract against the Postgres adapter, on the machine's Postgres; and its rows: a file is chunks
// of at most CHUNK_BYTES, and row-level security keeps them to their tenant.

import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@canopy/testing';
import { Database } from '../database';
import { fileStorageContract, generatedBytes } from './file-storage.contract';
import { CHUNK_BYTES, PostgresFileStorage } from './postgres-file.storage';

let testDb: TestDatabase;
let db: Database;
let storage: PostgresFileStorage;

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = new Database({ url: testDb.url, poolMax: 4, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 });
  storage = new PostgresFileStorage(db);
});

afterAll(async () => {
  await db?.disconnect();
  await testDb?.drop();
});

async function newTenant(): Promise<string> {
  const id = randomUUID();
  await db.withTenantSql({ tenantId: id }, (tx) =>
    tx.query(`INSERT INTO tenants (id, name) VALUES ($1::uuid, $2)`, [id, `files-${id.slice(0, 8)}`]),
  );
  return id;
}

fileStorageContract('postgres', () => ({ storage, newTenant }));

it('stores a file as chunks of at most CHUNK_BYTES, visible to its tenant only', async () => {
  const tenant = await newTenant();
  const other = await newTenant();
  const key = randomUUID();
  await storage.put(tenant, key, generatedBytes(2 * CHUNK_BYTES + 5).stream);
  const sizes = await db.withTenantSql({ tenantId: tenant }, (tx) =>
    tx.query<{ seq: number; n: number }>(
      `SELECT seq, octet_length(data) AS n FROM file_chunks WHERE storage_key = $1 ORDER BY seq`,
      [key],
    ),
  );
  expect(sizes).toEqual([
    { seq: 0, n: CHUNK_BYTES },
    { seq: 1, n: CHUNK_BYTES },
    { seq: 2, n: 5 },
  ]);
  const seenByOther = await db.withTenantSql({ tenantId: other }, (tx) =>
    tx.query(`SELECT 1 FROM file_chunks WHERE storage_key = $1`, [key]),
  );
  expect(seenByOther).toEqual([]);
});
