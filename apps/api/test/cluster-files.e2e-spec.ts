// Files on the distributed runtime with S3-compatible storage (s3rver from the npm registry, started here): an api
// and a worker process on Postgres and Redis. The api streams an upload into the bucket; the worker, which makes the
// model call, reads the file's bytes from the bucket and sends them to the provider (the fake records the request).
// And the same with the default storage, Postgres.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { Cluster, FakeLlmServer } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';

const BUCKET = 'canopy-cluster-files';
/** A 1x1 PNG. */
const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8cfc0f01f0005000201a5f2b1a30000000049454e44ae426082',
  'hex',
);

let cluster: Cluster;
let fake: FakeLlmServer;
let s3: S3rver;
let endpoint: string;
let directory: string;
let api: Api;
let tenantId: string;

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  directory = mkdtempSync(join(tmpdir(), 'canopy-cluster-s3-'));
  s3 = new S3rver({
    port: 0,
    address: '127.0.0.1',
    directory,
    silent: true,
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  endpoint = `http://127.0.0.1:${(await s3.run()).port}`;
  cluster = await new Cluster({
    apis: 1,
    workers: 1,
    env: {
      ANTHROPIC_API_KEY: 'sk-deployment',
      ANTHROPIC_BASE_URL: fake.baseUrl,
      FILES_STORAGE: 's3',
      FILES_S3_ENDPOINT: endpoint,
      FILES_S3_BUCKET: BUCKET,
      FILES_S3_ACCESS_KEY_ID: 'S3RVER',
      FILES_S3_SECRET_ACCESS_KEY: 'S3RVER',
      FILES_S3_PREFIX: 'canopy/',
    },
  }).start();
  const tenant = await newTenant({ url: cluster.api(1) } as never, 'cluster files');
  api = tenant.api;
  tenantId = tenant.tenantId;
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
  await s3?.close();
  await fake?.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
}, 60_000);

it('keeps an upload in the bucket and the worker sends its bytes to the model', async () => {
  const res = await fetch(`${api.baseUrl}/v1/files?name=pixel.png`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.credential}`, 'content-type': 'image/png' },
    body: PNG,
  });
  const file = (await res.json()) as { id: string; mediaType: string };
  expect(res.status).toBe(201);
  expect(file.mediaType).toBe('image/png');

  // The object itself, as another S3 client reads it: the bytes exactly, under the tenant's prefix.
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  try {
    const object = await client.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: `canopy/${tenantId}/${file.id}` }),
    );
    expect(Buffer.from(await object.Body!.transformToByteArray()).equals(PNG)).toBe(true);
  } finally {
    client.destroy();
  }
  const back = await fetch(`${api.baseUrl}/v1/files/${file.id}/content`, {
    headers: { authorization: `Bearer ${api.credential}` },
  });
  expect(Buffer.from(await back.arrayBuffer()).equals(PNG)).toBe(true);

  fake.enqueue({ text: ['a pixel'] });
  const session = (await api.post('/v1/sessions', { model: 'anthropic:claude-sonnet-4-5' })).body.id;
  const run = await api.post(`/v1/sessions/${session}/prompt`, {
    content: [
      { type: 'text', text: 'what is it?' },
      { type: 'attachment', fileId: file.id },
    ],
    wait: true,
  });
  expect(run.status).toBe(200);
  expect(run.body.finalResponse).toBe('a pixel');
  const parts = (fake.lastRequest().body as { messages: Array<{ content: unknown[] }> }).messages.at(
    -1,
  )!.content;
  expect(parts).toContainEqual({
    type: 'image',
    source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') },
  });
});

it('with Postgres storage (the default) an upload to the api reaches the model through the worker too', async () => {
  const pg = await new Cluster({
    apis: 1,
    workers: 1,
    env: { ANTHROPIC_API_KEY: 'sk-deployment', ANTHROPIC_BASE_URL: fake.baseUrl },
  }).start();
  try {
    const tenant = await newTenant({ url: pg.api(1) } as never, 'cluster files postgres');
    const res = await fetch(`${tenant.api.baseUrl}/v1/files?name=pixel.png`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'image/png' },
      body: PNG,
    });
    const file = (await res.json()) as { id: string };
    expect(res.status).toBe(201);
    fake.enqueue({ text: ['from the database'] });
    const session = (await tenant.api.post('/v1/sessions', { model: 'anthropic:claude-sonnet-4-5' })).body.id;
    const run = await tenant.api.post(`/v1/sessions/${session}/prompt`, {
      content: [{ type: 'attachment', fileId: file.id }],
      wait: true,
    });
    expect(run.status).toBe(200);
    expect(run.body.finalResponse).toBe('from the database');
    expect(JSON.stringify(fake.lastRequest().body)).toContain(PNG.toString('base64'));
  } finally {
    await pg.stop();
  }
}, 120_000);
