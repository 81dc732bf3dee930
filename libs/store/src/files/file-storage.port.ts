// The file storage port: where the bytes of a tenant's files live, by key. Two adapters: Postgres (chunked rows, the
// embedded default and small deployments) and S3-compatible object storage (the distributed deployment). Both
// stream: a file is never held whole in memory on its way in or out. Size limits, hashing and type sniffing happen
// in front of the port (file-intake.ts); an adapter stores what it is given, and leaves nothing behind when the
// stream it is given fails.

import type { Readable } from 'node:stream';

export interface FileStorage {
  /** What the files' rows record as their storage (`files.storage`). */
  readonly kind: 'postgres' | 's3';
  /**
   * Stores `body` under the tenant's `key` (a key is written once). The stream's failure fails the call, and what
   * was written of it is removed.
   */
  put(tenantId: string, key: string, body: Readable): Promise<void>;
  /** The bytes stored under the key, as a stream; 404 not_found when nothing is. */
  get(tenantId: string, key: string): Promise<Readable>;
  /** Removes what is stored under the key; nothing stored is no error. */
  delete(tenantId: string, key: string): Promise<void>;
}

export const FILE_STORAGE = Symbol('FILE_STORAGE');
