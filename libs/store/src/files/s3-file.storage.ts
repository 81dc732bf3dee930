// Files in S3-compatible object storage (AWS S3, MinIO, R2, GCS interoperability) through the AWS SDK's S3 client:
// each file one object under `<prefix><tenant id>/<key>`, streamed in by the SDK's multipart Upload (parts of
// 5 MiB, a few in flight: a file is never whole in memory) and streamed out of GetObject. Checksums are computed
// only where an operation requires them: with the SDK's default, a streamed upload is stored with aws-chunked
// framing inside the object by servers that do not speak it (s3rver, some S3-compatible services).

import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  NoSuchKey,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { CanopyException } from '@canopy/common';
import type { FileStorage } from './file-storage.port';

export interface S3StorageOptions {
  /** null: the AWS endpoint of the region. */
  endpoint: string | null;
  region: string;
  bucket: string;
  /** null: the SDK's default credential chain (environment, instance role). */
  credentials: { accessKeyId: string; secretAccessKey: string } | null;
  /** Prepended to every key (e.g. "canopy/"). */
  prefix: string;
  /** Path-style URLs (endpoint/bucket/key), as MinIO and most S3-compatible servers want. */
  forcePathStyle: boolean;
}

export class S3FileStorage implements FileStorage {
  readonly kind = 's3' as const;
  private readonly client: S3Client;

  constructor(private readonly options: S3StorageOptions) {
    this.client = new S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
      forcePathStyle: options.forcePathStyle,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
    });
  }

  async put(tenantId: string, key: string, body: Readable): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.options.bucket, Key: this.objectKey(tenantId, key), Body: body },
      queueSize: 2,
      partSize: 5 * 1024 * 1024,
      // A failed multipart upload is aborted (its parts removed), not left for a lifecycle rule.
      leavePartsOnError: false,
    });
    // The body's own failure (over the size limit, the client gone) ends the upload with it.
    const failed = new Promise<never>((_, reject) => body.once('error', reject));
    failed.catch(() => undefined);
    try {
      await Promise.race([upload.done(), failed]);
    } catch (err) {
      await upload.abort().catch(() => undefined);
      await this.delete(tenantId, key).catch(() => undefined);
      throw mapS3Error(err);
    }
  }

  async get(tenantId: string, key: string): Promise<Readable> {
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(tenantId, key) }),
      );
      if (!out.Body) throw CanopyException.notFound('file content');
      return out.Body as Readable;
    } catch (err) {
      if (
        err instanceof NoSuchKey ||
        (err instanceof S3ServiceException && err.$metadata.httpStatusCode === 404)
      )
        throw CanopyException.notFound('file content');
      throw mapS3Error(err);
    }
  }

  async delete(tenantId: string, key: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(tenantId, key) }),
      );
    } catch (err) {
      throw mapS3Error(err);
    }
  }

  /** Closes the client's sockets. */
  destroy(): void {
    this.client.destroy();
  }

  private objectKey(tenantId: string, key: string): string {
    return `${this.options.prefix}${tenantId}/${key}`;
  }
}

/** The object store unreachable or refusing: 503 (the request may be retried); our own errors pass. */
function mapS3Error(err: unknown): Error {
  if (err instanceof CanopyException) return err;
  const unreachable =
    err instanceof Error && /ECONNREFUSED|ENOTFOUND|ECONNRESET|socket|timeout/i.test(err.message);
  if (err instanceof S3ServiceException || unreachable)
    return CanopyException.unavailable(`object storage: ${err.message}`, err);
  return err instanceof Error ? err : new Error(String(err));
}
