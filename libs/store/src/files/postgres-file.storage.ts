// Files in Postgres: each file's bytes as rows of file_chunks (256 KiB each), written one statement per chunk as the
// upload streams in and read a few chunks at a time as the download streams out, so neither side holds a file
// whole. Each statement is a short transaction of its own: an upload as slow as its client holds no transaction
// open (nor the embedded database's one connection). A failed upload's chunks are deleted.

import { Readable } from 'node:stream';
import { CanopyException } from '@canopy/common';
import type { Database } from '../database';
import type { FileStorage } from './file-storage.port';

/** Bytes per row of file_chunks. */
export const CHUNK_BYTES = 256 * 1024;
/** Chunks one read of a download fetches. */
const CHUNKS_PER_READ = 4;

export class PostgresFileStorage implements FileStorage {
  readonly kind = 'postgres' as const;

  constructor(private readonly db: Database) {}

  async put(tenantId: string, key: string, body: Readable): Promise<void> {
    let seq = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const flush = async (chunk: Buffer) => {
      await this.db.withTenantSql({ tenantId }, (tx) =>
        tx.query(
          `INSERT INTO file_chunks (tenant_id, storage_key, seq, data) VALUES ($1::uuid, $2, $3, $4)`,
          [tenantId, key, seq, chunk],
        ),
      );
      seq++;
    };
    try {
      for await (const piece of body) {
        const buf = Buffer.isBuffer(piece) ? piece : Buffer.from(piece as Uint8Array);
        pending.push(buf);
        pendingBytes += buf.length;
        while (pendingBytes >= CHUNK_BYTES) {
          const all = Buffer.concat(pending, pendingBytes);
          await flush(all.subarray(0, CHUNK_BYTES));
          const rest = all.subarray(CHUNK_BYTES);
          pending = rest.length ? [Buffer.from(rest)] : [];
          pendingBytes = rest.length;
        }
      }
      if (pendingBytes > 0 || seq === 0) await flush(Buffer.concat(pending, pendingBytes));
    } catch (err) {
      await this.delete(tenantId, key).catch(() => undefined);
      throw err;
    }
  }

  async get(tenantId: string, key: string): Promise<Readable> {
    const first = await this.readChunks(tenantId, key, 0);
    if (first.length === 0) throw CanopyException.notFound('file content');
    const more = (from: number) => this.readChunks(tenantId, key, from);
    // Readable.from pulls the next chunks only when the reader wants more (backpressure).
    async function* chunks(): AsyncGenerator<Buffer> {
      let batch = first;
      let next = 0;
      for (;;) {
        for (const chunk of batch) if (chunk.length > 0) yield chunk;
        if (batch.length < CHUNKS_PER_READ) return;
        next += batch.length;
        batch = await more(next);
      }
    }
    return Readable.from(chunks(), { objectMode: false });
  }

  async delete(tenantId: string, key: string): Promise<void> {
    await this.db.withTenantSql({ tenantId }, (tx) =>
      tx.query(`DELETE FROM file_chunks WHERE tenant_id = $1::uuid AND storage_key = $2`, [tenantId, key]),
    );
  }

  private async readChunks(tenantId: string, key: string, from: number): Promise<Buffer[]> {
    const rows = await this.db.withTenantSql({ tenantId }, (tx) =>
      tx.query<{ data: Buffer }>(
        `SELECT data FROM file_chunks
          WHERE tenant_id = $1::uuid AND storage_key = $2 AND seq >= $3 AND seq < $4
          ORDER BY seq`,
        [tenantId, key, from, from + CHUNKS_PER_READ],
      ),
    );
    return rows.map((r) => r.data);
  }
}
