// The FileStorage contract against the S3 adapter, talking to s3rver (an S3-compatible server from the npm
// registry) started here on a free port with a bucket of its own; and what an S3 client reading the bucket
// directly sees: the object's bytes exactly (no aws-chunked framing), under the tenant's prefix.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import S3rver from 's3rver';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { fileStorageContract } from './file-storage.contract';
import { S3FileStorage } from './s3-file.storage';

const BUCKET = 'canopy-files';
let server: S3rver;
let directory: string;
let endpoint: string;
let storage: S3FileStorage;

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'canopy-s3rver-'));
  server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    directory,
    silent: true,
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  const address = await server.run();
  endpoint = `http://127.0.0.1:${address.port}`;
  storage = new S3FileStorage({
    endpoint,
    region: 'us-east-1',
    bucket: BUCKET,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    prefix: 'files/',
    forcePathStyle: true,
  });
});

afterAll(async () => {
  storage?.destroy();
  await server?.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

fileStorageContract('s3', () => ({ storage, newTenant: () => Promise.resolve(randomUUID()) }));

it('stores the bytes themselves under <prefix><tenant>/<key>, as another S3 client reads them', async () => {
  const tenant = randomUUID();
  const key = randomUUID();
  await storage.put(tenant, key, Readable.from([Buffer.from('plain bytes, '), Buffer.from('no framing')]));
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  try {
    const out = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: `files/${tenant}/${key}` }));
    expect(await out.Body!.transformToString()).toBe('plain bytes, no framing');
  } finally {
    client.destroy();
  }
});

it('answers 503 unavailable when the object store cannot be reached', async () => {
  const unreachable = new S3FileStorage({
    endpoint: 'http://127.0.0.1:1',
    region: 'us-east-1',
    bucket: BUCKET,
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
    prefix: '',
    forcePathStyle: true,
  });
  try {
    await expect(unreachable.get(randomUUID(), 'k')).rejects.toMatchObject({ code: 'unavailable' });
  } finally {
    unreachable.destroy();
  }
});
