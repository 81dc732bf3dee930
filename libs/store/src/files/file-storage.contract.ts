// The one contract every FileStorage adapter keeps, run against each (postgres-file.storage.int-spec.ts,
// s3-file.storage.int-spec.ts): bytes come back as they went in (empty, smaller than a chunk, many chunks with a
// ragged end), streamed; a failing upload leaves nothing; delete is idempotent; one tenant's key is not another's.

import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FileStorage } from './file-storage.port';

export interface FileStorageContext {
  storage: FileStorage;
  /** A tenant the storage may write for (its row exists where the adapter needs one). */
  readonly newTenant: () => Promise<string>;
}

async function readAll(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(Buffer.from(part as Uint8Array));
  return Buffer.concat(parts);
}

/** A stream of `total` pseudo-random bytes in pieces of `piece`, generated as read (never whole in memory). */
export function generatedBytes(total: number, piece = 64 * 1024): { stream: Readable; sha256: () => string } {
  const hash = createHash('sha256');
  let sent = 0;
  const stream = new Readable({
    read() {
      if (sent >= total) return void this.push(null);
      const n = Math.min(piece, total - sent);
      const bytes = randomBytes(n);
      hash.update(bytes);
      sent += n;
      this.push(bytes);
    },
  });
  return { stream, sha256: () => hash.digest('hex') };
}

function sha(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function fileStorageContract(name: string, context: () => FileStorageContext): void {
  describe(`FileStorage contract: ${name}`, () => {
    it('gives back the bytes it stored: empty, small, and many chunks with a ragged end', async () => {
      const { storage, newTenant } = context();
      const tenant = await newTenant();
      for (const size of [0, 10, 256 * 1024, 1024 * 1024 + 12_345, 6 * 1024 * 1024 + 7]) {
        const key = randomUUID();
        const input = generatedBytes(size, 50_000);
        await storage.put(tenant, key, input.stream);
        const back = await readAll(await storage.get(tenant, key));
        expect({ size, bytes: back.length, sha: sha(back) }).toEqual({
          size,
          bytes: size,
          sha: input.sha256(),
        });
      }
    });

    it('streams a download: the first bytes arrive before the rest is read', async () => {
      const { storage, newTenant } = context();
      const tenant = await newTenant();
      const key = randomUUID();
      const input = generatedBytes(3 * 1024 * 1024);
      await storage.put(tenant, key, input.stream);
      const stream = await storage.get(tenant, key);
      const iterator = stream[Symbol.asyncIterator]();
      const first = await iterator.next();
      expect(first.done).toBe(false);
      expect((first.value as Buffer).length).toBeLessThan(3 * 1024 * 1024);
      stream.destroy();
    });

    it('leaves nothing when the upload stream fails part way', async () => {
      const { storage, newTenant } = context();
      const tenant = await newTenant();
      const key = randomUUID();
      let sent = 0;
      const failing = new Readable({
        read() {
          if (sent >= 700 * 1024) return void this.destroy(new Error('client went away'));
          sent += 100 * 1024;
          this.push(randomBytes(100 * 1024));
        },
      });
      await expect(storage.put(tenant, key, failing)).rejects.toThrow('client went away');
      await expect(storage.get(tenant, key)).rejects.toMatchObject({ code: 'not_found' });
    });

    it('answers not_found for a key never stored, and deletes idempotently', async () => {
      const { storage, newTenant } = context();
      const tenant = await newTenant();
      const key = randomUUID();
      await expect(storage.get(tenant, key)).rejects.toMatchObject({ code: 'not_found' });
      await storage.put(tenant, key, Readable.from([Buffer.from('hello')]));
      await storage.delete(tenant, key);
      await expect(storage.get(tenant, key)).rejects.toMatchObject({ code: 'not_found' });
      await storage.delete(tenant, key);
    });

    it("keeps tenants apart: one tenant's key does not reach another's bytes", async () => {
      const { storage, newTenant } = context();
      const a = await newTenant();
      const b = await newTenant();
      const key = randomUUID();
      await storage.put(a, key, Readable.from([Buffer.from('secret of a')]));
      await expect(storage.get(b, key)).rejects.toMatchObject({ code: 'not_found' });
      await storage.delete(b, key);
      expect((await readAll(await storage.get(a, key))).toString()).toBe('secret of a');
    });
  });
}
