// Files: an upload streamed through the intake (counted, hashed, refused past its limit as it streams) into the
// configured storage, its type sniffed from its bytes; reads of its metadata and its bytes (streamed) within the
// caller's scope; deletion; and the sweep that removes the files no session refers to any more (and those stored
// from a prompt's inline data that no message came to refer to). The prompt side (attachments by file id) and the
// model side (their bytes) read files through here too.

import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Scope } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import type { FileStorage } from './file-storage.port';
import { FileMeter, fileNameOf, sniffMediaType } from './file-intake';
import type { FileRecord, FilesRepository } from './files.repository';

export interface FilesOptions {
  /** FILES_MAX_BYTES. */
  maxBytes: number;
}

export interface UploadInput {
  /** The file's name as the client gave it (a path is cut to its last part). */
  name: string;
  /** The content type the client declared (only a hint among text types: the bytes decide). */
  declaredType: string | null;
  /** The declared length, when known: refused at once when over the limit. */
  length: number | null;
  body: Readable;
  /**
   * Stored from a prompt's inline data: released by the sweep when no committed message comes to refer to it (a
   * run that failed or was cancelled before its commit). Uploads and imports are kept until deleted.
   */
  fromPrompt?: boolean;
}

export class FilesService {
  constructor(
    private readonly files: FilesRepository,
    private readonly storage: FileStorage,
    private readonly options: FilesOptions,
  ) {}

  get maxBytes(): number {
    return this.options.maxBytes;
  }

  async upload(scope: Scope, input: UploadInput): Promise<FileRecord> {
    if (input.length !== null && input.length > this.options.maxBytes) {
      input.body.resume();
      throw new CanopyException(
        'payload_too_large',
        `a file may be at most ${this.options.maxBytes} bytes (FILES_MAX_BYTES)`,
        {
          limit: this.options.maxBytes,
        },
      );
    }
    // The storage quotas (metric `storage`: the tenant's, a user token's user's), checked as the bytes stream (an
    // early refusal) and again, exactly, when the upload finishes.
    const quotaBytesLeft = await this.files.quotaLeft(scope);
    if (quotaBytesLeft !== null && input.length !== null && input.length > quotaBytesLeft) {
      throw new CanopyException(
        'quota_exceeded',
        `the tenant's file storage quota leaves ${quotaBytesLeft} bytes`,
        {
          metric: 'storage',
          left: quotaBytesLeft,
        },
      );
    }
    const id = randomUUID();
    const name = fileNameOf(input.name);
    await this.files.start(scope, {
      id,
      name,
      storage: this.storage.kind,
      storageKey: id,
      fromPrompt: input.fromPrompt ?? false,
    });
    const meter = new FileMeter({ maxBytes: this.options.maxBytes, quotaBytesLeft });
    // The storage reads the meter, the meter the body. Not pipeline(): a refusal must leave the request readable
    // (unpiped, not destroyed) so that its answer, 413, still reaches the client.
    const stored = this.storage.put(scope.tenantId, id, meter);
    const bodyFailed = (err: Error) => meter.destroy(err);
    input.body.once('error', bodyFailed);
    input.body.once('aborted', () => meter.destroy(new Error('the upload was cut off')));
    input.body.pipe(meter);
    try {
      await stored;
      const mediaType = await sniffMediaType(meter.firstBytes(), input.declaredType, name);
      // Checked again against the quotas, exactly (uploads finishing together take turns): one that no longer
      // fits is refused like one refused while streaming, and nothing of it is kept.
      return await this.files.finish(scope, id, { bytes: meter.bytes, sha256: meter.sha256(), mediaType });
    } catch (err) {
      input.body.unpipe(meter);
      await this.storage.delete(scope.tenantId, id).catch(() => undefined);
      await this.files.abandon(scope, id).catch(() => undefined);
      throw err;
    } finally {
      input.body.off('error', bodyFailed);
    }
  }

  get(scope: Scope, id: string): Promise<FileRecord> {
    return this.files.get(scope, id);
  }

  list(
    scope: Scope,
    page: { limit: number; before: { createdAt: Date; id: string } | null },
  ): Promise<FileRecord[]> {
    return this.files.list(scope, page);
  }

  /** The file and its bytes as a stream (404 when the scope does not reach it). */
  async content(
    scope: Pick<Scope, 'tenantId' | 'userId'>,
    id: string,
  ): Promise<{ file: FileRecord; body: Readable }> {
    const file = await this.files.get(scope, id);
    return { file, body: await this.storage.get(file.tenantId, file.storageKey) };
  }

  /** A file and its bytes by id alone, for a signed URL whose signature was checked (404 when gone). */
  async signedContent(id: string): Promise<{ file: FileRecord; body: Readable }> {
    const file = await this.files.bySignedId(id);
    if (!file) throw CanopyException.notFound('file');
    return { file, body: await this.storage.get(file.tenantId, file.storageKey) };
  }

  /** The bytes of a file a session refers to, whole (what a model call carries). */
  async bytesOf(file: FileRecord): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const part of await this.storage.get(file.tenantId, file.storageKey))
      parts.push(Buffer.from(part as Uint8Array));
    return Buffer.concat(parts);
  }

  /** Up to `max` first bytes of a file (a text attachment inlined up to a limit). */
  async headOf(file: FileRecord, max: number): Promise<Buffer> {
    const parts: Buffer[] = [];
    let n = 0;
    const body = await this.storage.get(file.tenantId, file.storageKey);
    for await (const part of body) {
      const buf = Buffer.from(part as Uint8Array);
      parts.push(buf.subarray(0, max - n));
      n += Math.min(buf.length, max - n);
      if (n >= max) break;
    }
    body.destroy();
    return Buffer.concat(parts);
  }

  /** Files a session's messages refer to (any user's; deleted ones until the sweep took them). */
  forSession(tenantId: string, ids: readonly string[]): Promise<FileRecord[]> {
    return this.files.forSession(tenantId, ids);
  }

  /**
   * The files a prompt refers to, checked against the scope (404 not_found naming the first it does not reach),
   * and referred to by the session from now on.
   */
  async attach(scope: Scope, sessionId: string, ids: readonly string[]): Promise<Map<string, FileRecord>> {
    const unique = [...new Set(ids)];
    const found = new Map((await this.files.getMany(scope, unique)).map((f) => [f.id, f]));
    const missing = unique.find((id) => !found.has(id));
    if (missing !== undefined)
      throw new CanopyException('not_found', `file ${missing} not found`, { fileId: missing });
    await this.files.refer(scope, sessionId, unique);
    return found;
  }

  /** The ids among `ids` the scope does not reach (another user's, another tenant's, deleted, unknown). */
  async unreachable(scope: Scope, ids: readonly string[]): Promise<string[]> {
    const unique = [...new Set(ids)];
    const found = new Set((await this.files.getMany(scope, unique)).map((f) => f.id));
    return unique.filter((id) => !found.has(id));
  }

  /** Deleted by its owner: gone from the API now, its bytes once no session refers to it. */
  async delete(scope: Scope, id: string): Promise<void> {
    await this.files.markDeleted(scope, id);
    await this.sweep();
  }

  /** Removes up to `limit` released files (bytes, then rows); answers how many. */
  async sweep(limit = 100): Promise<number> {
    // Files stored from prompts that no message came to refer to are released first, then removed with the rest.
    await this.files.releaseUnusedPromptFiles(limit);
    let removed = 0;
    for (const file of await this.files.released(limit)) {
      try {
        await this.storage.delete(file.tenantId, file.storageKey);
        if (await this.files.remove(file)) removed++;
      } catch {
        // Left for the next sweep (the row stays, marked deleted).
      }
    }
    return removed;
  }

  storedBytes(tenantId: string): Promise<number> {
    return this.files.storedBytes(tenantId);
  }
}
