// Files over HTTP, on Postgres storage: uploads (raw and multipart) sniffed from their bytes, refused past
// FILES_MAX_BYTES while they stream; metadata and bytes served with their type, nosniff and a disposition; signed
// URLs; tenant and user scoping (tenant B reaches tenant A's file by no id, signed URL or fork); prompts that refer
// to files, whose bytes reach the model (the fake provider records its requests) as image, document and text parts;
// inline base64 stored as a file (and released when no message came to refer to it, its run having failed or been
// cancelled); 400 attachment_unsupported; a fork sharing its source's files, and files removed once no session refers
// to them; the storage quota, exact under concurrent uploads on Postgres and on the embedded PGlite.

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return -- JSON bodies read loosely */

import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { Client } from 'pg';
import { Database } from '@canopy/store';
import { eventually, FakeLlmServer } from '@canopy/testing';
import { Api, newTenant, type ApiResponse } from './support/api-client';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';

/** A 1x1 PNG. */
const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8cfc0f01f0005000201a5f2b1a30000000049454e44ae426082',
  'hex',
);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
const ZIP = Buffer.from('504b0304140000000800000000000000000000000000000000000000', 'hex');
const MAX_BYTES = 256 * 1024;

let t: TestApp;
let fake: FakeLlmServer;
let a: { tenantId: string; api: Api; key: string };
let b: { tenantId: string; api: Api; key: string };

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

/** A raw upload: the bytes as the body, with a content type and a name. */
async function upload(api: Api, bytes: Buffer, type: string, name: string): Promise<ApiResponse> {
  const res = await fetch(`${api.baseUrl}/v1/files?name=${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.credential}`, 'content-type': type },
    body: bytes,
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

async function bytesOf(
  url: string,
  credential?: string,
): Promise<{ status: number; bytes: Buffer; headers: Headers }> {
  const res = await fetch(url, { headers: credential ? { authorization: `Bearer ${credential}` } : {} });
  return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  t = await startTestApp({
    env: {
      FILES_MAX_BYTES: String(MAX_BYTES),
      FILES_SWEEP_INTERVAL_MS: '200',
      RETENTION_SWEEP_INTERVAL_MS: '300',
      ANTHROPIC_API_KEY: 'sk-deployment',
      ANTHROPIC_BASE_URL: fake.baseUrl,
      OPENAI_COMPATIBLE_API_KEY: 'sk-deployment',
      OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
      OPENAI_COMPATIBLE_MODELS: 'local-llama',
    },
  });
  a = await newTenant(t, 'files a');
  b = await newTenant(t, 'files b');
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('uploads', () => {
  it('stores a raw upload with the type its bytes have, whatever was declared, and serves it back', async () => {
    const res = await upload(a.api, PNG, 'text/plain', 'pixel.txt');
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'pixel.txt',
      mediaType: 'image/png',
      bytes: PNG.length,
      sha256: sha(PNG),
      userId: null,
      createdAt: expect.any(String),
    });
    expect((await a.api.get(`/v1/files/${res.body.id}`)).body).toEqual(res.body);
    const content = await bytesOf(`${t.url}/v1/files/${res.body.id}/content`, a.key);
    expect(content.status).toBe(200);
    expect(content.bytes.equals(PNG)).toBe(true);
    expect(content.headers.get('content-type')).toBe('image/png');
    expect(content.headers.get('x-content-type-options')).toBe('nosniff');
    expect(content.headers.get('content-disposition')).toMatch(/^inline; filename="pixel.txt"/);
  });

  it('takes the field `file` of a multipart body; anything but an image is served as an attachment', async () => {
    const form = new FormData();
    form.append('note', 'ignored');
    form.append(
      'file',
      new Blob([Buffer.from('# Notes\n\nplain words\n')], { type: 'text/markdown' }),
      'notes.md',
    );
    const res = await fetch(`${t.url}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.key}` },
      body: form,
    });
    const body = (await res.json()) as Record<string, any>;
    expect(res.status).toBe(201);
    expect(body).toMatchObject({ name: 'notes.md', mediaType: 'text/markdown', bytes: 21 });
    const content = await bytesOf(`${t.url}/v1/files/${body.id}/content`, a.key);
    expect(content.bytes.toString()).toBe('# Notes\n\nplain words\n');
    expect(content.headers.get('content-disposition')).toMatch(/^attachment; filename="notes.md"/);
    expect(content.headers.get('x-content-type-options')).toBe('nosniff');

    const noFile = new FormData();
    noFile.append('other', new Blob([Buffer.from('x')]), 'x.txt');
    const refused = await fetch(`${t.url}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.key}` },
      body: noFile,
    });
    expect({ status: refused.status, body: await refused.json() }).toMatchObject({
      status: 400,
      body: { error: { code: 'bad_request', details: { field: 'file' } } },
    });
    expectError(await upload(a.api, Buffer.alloc(0), 'text/plain', 'empty.txt'), 400, 'bad_request');
    // A multipart body that is not one, and one with no boundary.
    for (const type of ['multipart/form-data; boundary=xyz', 'multipart/form-data']) {
      const broken = await fetch(`${t.url}/v1/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.key}`, 'content-type': type },
        body: 'not a multipart body at all',
      });
      expect({ type, status: broken.status, code: ((await broken.json()) as any).error?.code }).toEqual({
        type,
        status: 400,
        code: 'bad_request',
      });
    }
  });

  it('refuses a declared length over FILES_MAX_BYTES at once, and an undeclared one as it streams past it', async () => {
    expectError(
      await upload(a.api, randomBytes(MAX_BYTES + 1), 'application/octet-stream', 'big'),
      413,
      'payload_too_large',
    );

    // Chunked, no length: the answer comes while the client is still sending (the body never ends here).
    const before = (await a.api.get('/v1/files?limit=1000')).body.data.length;
    const url = new URL(`${t.url}/v1/files?name=endless`);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/octet-stream' },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      let sent = 0;
      const more = () => {
        // Twice the limit, then nothing more: the request stays open.
        while (sent < 2 * MAX_BYTES) {
          sent += 16 * 1024;
          if (!req.write(randomBytes(16 * 1024))) return void req.once('drain', more);
        }
      };
      more();
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).error.code).toBe('payload_too_large');
    // Nothing of it was kept.
    expect((await a.api.get('/v1/files?limit=1000')).body.data.length).toBe(before);
    const db = new Client({ connectionString: t.database!.url });
    await db.connect();
    try {
      await db.query(`SELECT set_config('canopy.tenant_id', $1, false)`, [a.tenantId]);
      const { rows } = await db.query(`SELECT count(*)::int AS n FROM files WHERE name = 'endless'`);
      expect(rows[0].n).toBe(0);
      const chunks = await db.query(
        `SELECT count(*)::int AS n FROM file_chunks c WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.storage_key = c.storage_key)`,
      );
      expect(chunks.rows[0].n).toBe(0);
    } finally {
      await db.end();
    }
  });
});

describe('the storage quota', () => {
  it('refuses an upload past the tenant’s storage quota, shows the bytes in the quotas and the usage report, and never stops a run', async () => {
    const c = await newTenant(t, 'files quota');
    const admin = new Api(t.url, TEST_ADMIN_KEY);
    const set = await admin.request('PUT', `/v1/admin/tenants/${c.tenantId}/quotas`, {
      quotas: [{ metric: 'storage', period: 'month', limit: 1_000 }],
    });
    expect(set.status).toBe(200);
    expect((await upload(c.api, randomBytes(600), 'application/octet-stream', 'first')).status).toBe(201);
    // Declared too long: at once; undeclared (multipart): as it streams past what is left.
    expectError(
      await upload(c.api, randomBytes(600), 'application/octet-stream', 'second'),
      429,
      'quota_exceeded',
    );
    const form = new FormData();
    form.append('file', new Blob([randomBytes(600)]), 'third');
    const streamed = await fetch(`${t.url}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${c.key}` },
      body: form,
    });
    expect(streamed.status).toBe(429);
    expect((await upload(c.api, randomBytes(300), 'application/octet-stream', 'fits')).status).toBe(201);

    const quotas = await c.api.get('/v1/quotas');
    expect(quotas.body.tenant).toEqual([
      expect.objectContaining({ metric: 'storage', limit: 1_000, usage: 900 }),
    ]);
    const usage = await c.api.get('/v1/usage');
    expect(usage.body.storage).toEqual({ bytes: 900, files: 2 });
    // Runs are not limited by it.
    const session = (await c.api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    expect(
      (await c.api.post(`/v1/sessions/${session}/prompt`, { content: 'still runs', wait: true })).status,
    ).toBe(200);
  });
});

/**
 * Six uploads at once against a storage quota three of them fill: exactly three are kept, the others answer 429
 * quota_exceeded, and nothing of theirs stays (neither a row nor a stored chunk).
 */
async function concurrentUploadsWithinQuota(
  app: TestApp,
  scope: 'tenant' | 'user' = 'tenant',
): Promise<void> {
  const c = await newTenant(app, `files concurrent ${scope} quota`);
  const size = 40_000;
  const quotas = [{ metric: 'storage', period: 'month', limit: 3 * size + size / 2 }];
  let uploader = c.api;
  if (scope === 'tenant') {
    const admin = new Api(app.url, TEST_ADMIN_KEY);
    expect((await admin.request('PUT', `/v1/admin/tenants/${c.tenantId}/quotas`, { quotas })).status).toBe(
      200,
    );
  } else {
    expect((await c.api.request('PUT', '/v1/quotas/users/alice', { quotas })).status).toBe(200);
    uploader = c.api.as((await c.api.post('/v1/tokens', { userId: 'alice' })).body.token as string);
  }
  const answers = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      upload(uploader, randomBytes(size), 'application/octet-stream', `part-${i}.bin`),
    ),
  );
  const statuses = answers.map((r) => r.status).sort();
  expect(statuses).toEqual([201, 201, 201, 429, 429, 429]);
  for (const refused of answers.filter((r) => r.status !== 201)) expectError(refused, 429, 'quota_exceeded');
  const kept = answers.filter((r) => r.status === 201).map((r) => r.body.id as string);

  const stored = await app.app.get(Database).withAdminSql('test: what the uploads left', async (tx) => {
    const [files] = await tx.query<{ n: number; bytes: number; ids: string[] }>(
      `SELECT count(*)::int AS n, coalesce(sum(bytes), 0)::float8 AS bytes,
              coalesce(array_agg(id::text), '{}') AS ids
         FROM files WHERE tenant_id = $1::uuid`,
      [c.tenantId],
    );
    const [chunks] = await tx.query<{ keys: string[] }>(
      `SELECT coalesce(array_agg(DISTINCT storage_key), '{}') AS keys FROM file_chunks WHERE tenant_id = $1::uuid`,
      [c.tenantId],
    );
    return { n: files!.n, bytes: files!.bytes, ids: [...files!.ids].sort(), keys: [...chunks!.keys].sort() };
  });
  expect(stored).toEqual({
    n: 3,
    bytes: 3 * size,
    ids: [...kept].sort(),
    keys: [...kept].sort(),
  });
  const usage = [expect.objectContaining({ metric: 'storage', usage: 3 * size })];
  const overview = (await c.api.get('/v1/quotas')).body;
  if (scope === 'tenant') expect(overview.tenant).toEqual(usage);
  else expect(overview.users).toEqual([{ userId: 'alice', quotas: usage }]);
}

describe('the storage quota under concurrent uploads', () => {
  it('never lets uploads made at once pass it together (Postgres)', async () => {
    await concurrentUploadsWithinQuota(t);
  });

  it('never lets one user’s uploads made at once pass that user’s quota together (Postgres)', async () => {
    await concurrentUploadsWithinQuota(t, 'user');
  });

  it('never lets uploads made at once pass it together (embedded PGlite)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'canopy-files-quota-embedded-'));
    const embedded = await startTestApp({ embeddedDataDir: dir });
    try {
      await concurrentUploadsWithinQuota(embedded);
    } finally {
      await embedded.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('scoping', () => {
  it("keeps tenant A's file from tenant B by id, signed URL and fork, and a user's from another user", async () => {
    const alice = (await a.api.post('/v1/tokens', { userId: 'alice' })).body.token as string;
    const mallory = (await a.api.post('/v1/tokens', { userId: 'mallory' })).body.token as string;
    const file = (await upload(a.api.as(alice), PNG, 'image/png', 'alice.png')).body;
    expect(file.userId).toBe('alice');

    for (const api of [b.api, a.api.as(mallory)]) {
      expectError(await api.get(`/v1/files/${file.id}`), 404, 'not_found');
      expect((await bytesOf(`${t.url}/v1/files/${file.id}/content`, api.credential)).status).toBe(404);
      expectError(await api.post(`/v1/files/${file.id}/url`, {}), 404, 'not_found');
      expectError(await api.delete(`/v1/files/${file.id}`), 404, 'not_found');
      expect((await api.get('/v1/files')).body.data.map((f: { id: string }) => f.id)).not.toContain(file.id);
    }
    // The tenant's key and the uploader reach it.
    expect((await a.api.get(`/v1/files/${file.id}`)).status).toBe(200);
    expect((await a.api.as(alice).get(`/v1/files/${file.id}`)).status).toBe(200);

    // B cannot send A's file to a model in a session of its own, nor fork a session of A's that has it.
    const bSession = (await b.api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    expectError(
      await b.api.post(`/v1/sessions/${bSession}/prompt`, {
        content: [{ type: 'attachment', fileId: file.id }],
        wait: true,
      }),
      404,
      'not_found',
    );
    const aSession = (await a.api.post('/v1/sessions', { model: 'mock:echo', userId: 'alice' })).body.id;
    const prompted = await a.api.post(`/v1/sessions/${aSession}/prompt`, {
      content: [
        { type: 'text', text: 'look' },
        { type: 'attachment', fileId: file.id },
      ],
      wait: true,
    });
    expect(prompted.status).toBe(200);
    expectError(await b.api.post(`/v1/sessions/${aSession}/fork`, {}), 404, 'not_found');

    // Signed: the URL reads the file with no credential; changed in any way it reads nothing.
    const signed = await a.api.as(alice).post(`/v1/files/${file.id}/url`, { ttlSeconds: 60 });
    expect(signed.status).toBe(200);
    expect(signed.body.url).toMatch(new RegExp(`^/v1/files/${file.id}/signed\\?`));
    const read = await bytesOf(`${t.url}${signed.body.url}`);
    expect(read.status).toBe(200);
    expect(read.bytes.equals(PNG)).toBe(true);
    expect(read.headers.get('x-content-type-options')).toBe('nosniff');
    const other = (await upload(b.api, PNG, 'image/png', 'b.png')).body;
    const elsewhere = signed.body.url.replace(file.id, other.id);
    expect((await bytesOf(`${t.url}${elsewhere}`)).status).toBe(404);
    const later = signed.body.url.replace(
      /expires=(\d+)/,
      (_: string, n: string) => `expires=${Number(n) + 3600}`,
    );
    expect((await bytesOf(`${t.url}${later}`)).status).toBe(404);
  });
});

describe('prompts with files', () => {
  it('sends images and PDFs as file parts, text files as text, and keeps only the ids in the nodes', async () => {
    const png = (await upload(a.api, PNG, 'image/png', 'pixel.png')).body;
    const pdf = (await upload(a.api, PDF, 'application/pdf', 'doc.pdf')).body;
    const csv = (await upload(a.api, Buffer.from('name,score\nada,3\n'), 'text/csv', 'scores.csv')).body;
    expect([png.mediaType, pdf.mediaType, csv.mediaType]).toEqual([
      'image/png',
      'application/pdf',
      'text/csv',
    ]);
    const session = (await a.api.post('/v1/sessions', { model: 'anthropic:claude-sonnet-4-5' })).body.id;
    fake.enqueue({ text: ['seen'] });
    const run = await a.api.post(`/v1/sessions/${session}/prompt`, {
      content: [
        { type: 'text', text: 'what is in these?' },
        { type: 'attachment', fileId: png.id },
        { type: 'attachment', fileId: pdf.id },
        { type: 'attachment', fileId: csv.id },
      ],
      wait: true,
    });
    expect(run.status).toBe(200);
    expect(run.body.finalResponse).toBe('seen');
    const sent = fake.lastRequest().body as { messages: Array<{ role: string; content: any[] }> };
    const parts = sent.messages.at(-1)!.content;
    expect(parts).toEqual([
      { type: 'text', text: 'what is in these?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') } },
      expect.objectContaining({
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: PDF.toString('base64') },
      }),
      { type: 'text', text: expect.stringContaining('name,score\nada,3') },
    ]);
    // The node holds the references, not the bytes.
    const messages = (await a.api.get(`/v1/sessions/${session}/messages`)).body;
    const stored = JSON.stringify(messages);
    expect(stored).not.toContain(PNG.toString('base64'));
    expect(stored).toContain(png.id);
    const prompt = (messages.data ?? messages).find((m: { role: string }) => m.role === 'user');
    expect(prompt.content[1]).toEqual({
      type: 'attachment',
      fileId: png.id,
      mediaType: 'image/png',
      name: 'pixel.png',
      bytes: PNG.length,
    });

    // The next turn sends the file again (read from storage for each call).
    fake.enqueue({ text: ['again'] });
    expect(
      (await a.api.post(`/v1/sessions/${session}/prompt`, { content: 'and now?', wait: true })).status,
    ).toBe(200);
    expect(JSON.stringify(fake.lastRequest().body)).toContain(PNG.toString('base64'));
  });

  it('stores inline base64 as a file when the prompt is taken', async () => {
    const session = (await a.api.post('/v1/sessions', { model: 'anthropic:claude-sonnet-4-5' })).body.id;
    fake.enqueue({ text: ['ok'] });
    const run = await a.api.post(`/v1/sessions/${session}/prompt`, {
      content: [
        { type: 'attachment', mediaType: 'image/png', data: PNG.toString('base64'), name: 'inline.png' },
      ],
      wait: true,
    });
    expect(run.status).toBe(200);
    const messages = (await a.api.get(`/v1/sessions/${session}/messages`)).body;
    const prompt = (messages.data ?? messages).find((m: { role: string }) => m.role === 'user');
    const block = prompt.content[0];
    expect(block).toMatchObject({
      type: 'attachment',
      mediaType: 'image/png',
      name: 'inline.png',
      bytes: PNG.length,
    });
    expect(block.data).toBeUndefined();
    const file = await a.api.get(`/v1/files/${block.fileId}`);
    expect(file.body).toMatchObject({ sha256: sha(PNG), mediaType: 'image/png' });
    expect(JSON.stringify(fake.lastRequest().body)).toContain(PNG.toString('base64'));
  });

  it('answers 400 attachment_unsupported for a type the model cannot take, before any run', async () => {
    const zip = (await upload(a.api, ZIP, 'application/zip', 'a.zip')).body;
    expect(zip.mediaType).toBe('application/zip');
    const pdf = (await upload(a.api, PDF, 'application/pdf', 'doc.pdf')).body;
    const anthropic = (await a.api.post('/v1/sessions', { model: 'anthropic:claude-sonnet-4-5' })).body.id;
    const compatible = (await a.api.post('/v1/sessions', { model: 'openai-compatible:local-llama' })).body.id;
    const requests = fake.requests.length;
    const zipped = await a.api.post(`/v1/sessions/${anthropic}/prompt`, {
      content: [{ type: 'attachment', fileId: zip.id }],
    });
    expectError(zipped, 400, 'attachment_unsupported');
    expect(zipped.body.error.details).toMatchObject({ field: 'content.0', mediaType: 'application/zip' });
    expectError(
      await a.api.post(`/v1/sessions/${compatible}/prompt`, {
        content: [
          { type: 'text', text: 'read' },
          { type: 'attachment', fileId: pdf.id },
        ],
      }),
      400,
      'attachment_unsupported',
    );
    expect(fake.requests.length).toBe(requests);
    expect((await a.api.get(`/v1/sessions/${anthropic}/tree`)).body.nodes).toEqual([]);
  });
});

describe('through the conversation’s life', () => {
  it('a fork shares its source’s files; they are removed once no session refers to them', async () => {
    const file = (await upload(a.api, PNG, 'image/png', 'shared.png')).body;
    const source = (await a.api.post('/v1/sessions', { model: 'anthropic:claude-sonnet-4-5' })).body.id;
    fake.enqueue({ text: ['one'] });
    await a.api.post(`/v1/sessions/${source}/prompt`, {
      content: [{ type: 'attachment', fileId: file.id }],
      wait: true,
    });
    const fork = await a.api.post(`/v1/sessions/${source}/fork`, {});
    expect(fork.status).toBe(201);
    // The owner deletes the file: it is listed no more, but the conversations that show it keep it.
    expect((await a.api.delete(`/v1/files/${file.id}`)).status).toBe(204);
    expectError(await a.api.get(`/v1/files/${file.id}`), 404, 'not_found');
    expect((await a.api.delete(`/v1/sessions/${source}`)).status).toBe(204);
    fake.enqueue({ text: ['two'] });
    expect(
      (await a.api.post(`/v1/sessions/${fork.body.id}/prompt`, { content: 'still there?', wait: true }))
        .status,
    ).toBe(200);
    expect(JSON.stringify(fake.lastRequest().body)).toContain(PNG.toString('base64'));

    // The last session that refers to it goes: so do its row and its bytes.
    expect((await a.api.delete(`/v1/sessions/${fork.body.id}`)).status).toBe(204);
    const db = new Client({ connectionString: t.database!.url });
    await db.connect();
    try {
      await db.query(`SELECT set_config('canopy.tenant_id', $1, false)`, [a.tenantId]);
      const left = async () =>
        (
          await db.query(
            `SELECT (SELECT count(*) FROM files WHERE id = $1)::int AS files,
                    (SELECT count(*) FROM file_chunks WHERE storage_key = $2)::int AS chunks`,
            [file.id, file.id],
          )
        ).rows[0];
      await eventually(async () => expect(await left()).toEqual({ files: 0, chunks: 0 }));
    } finally {
      await db.end();
    }
  });
});

describe('files stored from a prompt that no message came to refer to', () => {
  it('are released once their run failed or was cancelled before its commit; used and uploaded files stay', async () => {
    const c = await newTenant(t, 'files from prompts');
    const db = t.app.get(Database);
    const session = (await c.api.post('/v1/sessions', { model: 'anthropic:claude-sonnet-4-5' })).body.id;
    const inline = (name: string, text: string) => ({
      content: [
        { type: 'text', text },
        { type: 'attachment', mediaType: 'image/png', data: PNG.toString('base64'), name },
      ],
    });
    const fileNamed = async (name: string) =>
      db.withAdminSql('test: a file by name', async (tx) => {
        const [row] = await tx.query<{ id: string }>(
          `SELECT id::text AS id FROM files WHERE tenant_id = $1::uuid AND name = $2`,
          [c.tenantId, name],
        );
        return row?.id;
      });

    // A run the provider refuses: it fails before any commit.
    fake.enqueue({ status: 400, message: 'refused' });
    const failed = await c.api.post(`/v1/sessions/${session}/prompt`, {
      ...inline('failed.png', 'a'),
      wait: true,
    });
    expect(failed.body.status).toBe('error');
    // A run cancelled while its model call is held.
    let release!: () => void;
    fake.enqueue({ text: ['too late'], hold: new Promise<void>((resolve) => (release = resolve)) });
    const calls = fake.requests.length;
    const cancelled = await c.api.post(`/v1/sessions/${session}/prompt`, inline('cancelled.png', 'b'));
    expect(cancelled.status).toBe(202);
    await eventually(() => expect(fake.requests.length).toBe(calls + 1));
    expect((await c.api.post(`/v1/sessions/${session}/cancel`, {})).status).toBe(200);
    release();
    await eventually(async () =>
      expect((await c.api.get(`/v1/runs/${cancelled.body.runId as string}`)).body.status).toBe('cancelled'),
    );
    // A run that completes: its message refers to the file.
    fake.enqueue({ text: ['seen'] });
    const used = await c.api.post(`/v1/sessions/${session}/prompt`, {
      ...inline('used.png', 'c'),
      wait: true,
    });
    expect(used.body.status).toBe('completed');
    // An upload never used yet.
    const uploaded = (await upload(c.api, PNG, 'image/png', 'uploaded.png')).body.id as string;

    const ids = {
      failed: (await fileNamed('failed.png'))!,
      cancelled: (await fileNamed('cancelled.png'))!,
      used: (await fileNamed('used.png'))!,
      uploaded,
    };
    expect(Object.values(ids).every(Boolean)).toBe(true);
    const left = () =>
      db.withAdminSql('test: the files left', async (tx) => {
        const files = await tx.query<{ id: string; marked: boolean }>(
          `SELECT id::text AS id, from_prompt_at IS NOT NULL AS marked FROM files WHERE tenant_id = $1::uuid`,
          [c.tenantId],
        );
        const chunks = await tx.query<{ key: string }>(
          `SELECT DISTINCT storage_key AS key FROM file_chunks WHERE tenant_id = $1::uuid`,
          [c.tenantId],
        );
        return {
          files: Object.fromEntries(files.map((f) => [f.id, f.marked])),
          chunks: chunks.map((k) => k.key).sort(),
        };
      });
    // Within the grace period, the sweep (every 200 ms here) keeps every one of them.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await left()).files).toEqual({
      [ids.failed]: true,
      [ids.cancelled]: true,
      [ids.used]: true,
      [ids.uploaded]: false,
    });

    // An hour later (the files and the session's references made earlier): the unused ones go, bytes and rows.
    await db.withAdminSql('test: an hour passes', async (tx) => {
      await tx.query(
        `UPDATE files SET from_prompt_at = from_prompt_at - interval '2 hours',
                          created_at = created_at - interval '2 hours' WHERE tenant_id = $1::uuid`,
        [c.tenantId],
      );
      await tx.query(
        `UPDATE file_refs SET created_at = created_at - interval '2 hours' WHERE tenant_id = $1::uuid`,
        [c.tenantId],
      );
    });
    await eventually(async () =>
      expect(await left()).toEqual({
        files: { [ids.used]: false, [ids.uploaded]: false },
        chunks: [ids.used, ids.uploaded].sort(),
      }),
    );
    // The conversation still shows and sends the used one.
    fake.enqueue({ text: ['again'] });
    expect(
      (await c.api.post(`/v1/sessions/${session}/prompt`, { content: 'and now?', wait: true })).body.status,
    ).toBe('completed');
    expect(JSON.stringify(fake.lastRequest().body)).toContain(PNG.toString('base64'));
    expect((await c.api.get(`/v1/files/${ids.uploaded}`)).status).toBe(200);
  });
});

describe('retention', () => {
  it('a session expired by its tenant’s retention releases its files, which are then removed', async () => {
    const file = (await upload(a.api, PNG, 'image/png', 'old.png')).body;
    const source = (await a.api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    await a.api.post(`/v1/sessions/${source}/prompt`, {
      content: [{ type: 'attachment', fileId: file.id }],
      wait: true,
    });
    const doc = (await a.api.get(`/v1/sessions/${source}/export?format=canopy`)).body;
    // The same conversation in a tenant that keeps sessions a day, last touched ten days ago.
    const d = await newTenant(t, 'files retention');
    const aged = new Date(Date.now() - 10 * 86_400_000).toISOString();
    const imported = await d.api.post('/v1/sessions/import', {
      format: 'canopy',
      data: { ...doc, session: { ...doc.session, id: undefined, createdAt: aged, updatedAt: aged } },
    });
    expect(imported.status).toBe(201);
    const messages = (await d.api.get(`/v1/sessions/${imported.body.id}/messages`)).body;
    const copy = (messages.data ?? messages)[0].content[0].fileId as string;
    expect((await d.api.get(`/v1/files/${copy}`)).status).toBe(200);

    const admin = new Api(t.url, TEST_ADMIN_KEY);
    const set = await admin.patch(`/v1/admin/tenants/${d.tenantId}`, { retention: { deleteAfterDays: 1 } });
    expect(set.status).toBe(200);
    await eventually(async () =>
      expectError(await d.api.get(`/v1/sessions/${imported.body.id}`), 404, 'not_found'),
    );
    await eventually(async () => expectError(await d.api.get(`/v1/files/${copy}`), 404, 'not_found'));
    // Tenant A's own file, whose session lives on, stays.
    expect((await a.api.get(`/v1/files/${file.id}`)).status).toBe(200);
  });
});

describe('export and import', () => {
  it('a canopy export carries the files; an import stores them again as the importing tenant’s', async () => {
    const file = (await upload(a.api, PNG, 'image/png', 'carried.png')).body;
    const session = (await a.api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    await a.api.post(`/v1/sessions/${session}/prompt`, {
      content: [
        { type: 'text', text: 'keep this' },
        { type: 'attachment', fileId: file.id },
      ],
      wait: true,
    });
    const exported = await a.api.get(`/v1/sessions/${session}/export?format=canopy`);
    expect(exported.status).toBe(200);
    expect(exported.body.files).toEqual([
      { id: file.id, name: 'carried.png', mediaType: 'image/png', data: PNG.toString('base64') },
    ]);

    // Into another tenant: a file of its own, with the same bytes, under a new id the attachment now names.
    const imported = await b.api.post('/v1/sessions/import', { format: 'canopy', data: exported.body });
    expect(imported.status).toBe(201);
    const messages = (await b.api.get(`/v1/sessions/${imported.body.id}/messages`)).body;
    const prompt = (messages.data ?? messages).find((m: { role: string }) => m.role === 'user');
    const block = prompt.content[1];
    expect(block).toMatchObject({ type: 'attachment', mediaType: 'image/png', name: 'carried.png' });
    expect(block.fileId).not.toBe(file.id);
    const copy = await bytesOf(`${t.url}/v1/files/${block.fileId}/content`, b.key);
    expect(copy.status).toBe(200);
    expect(copy.bytes.equals(PNG)).toBe(true);
    // A's own file is still A's alone.
    expectError(await b.api.get(`/v1/files/${file.id}`), 404, 'not_found');
  });

  it('the bulk export carries the files too, and a bulk import into another tenant restores them', async () => {
    const file = (await upload(a.api, PNG, 'image/png', 'bulk.png')).body;
    const session = (await a.api.post('/v1/sessions', { model: 'mock:echo', userId: 'bulk-exporter' })).body
      .id;
    await a.api.post(`/v1/sessions/${session}/prompt`, {
      content: [
        { type: 'text', text: 'in bulk' },
        { type: 'attachment', fileId: file.id },
      ],
      wait: true,
    });
    const exported = await fetch(`${t.url}/v1/export?userId=bulk-exporter`, {
      headers: { authorization: `Bearer ${a.key}` },
    });
    const lines = (await exported.text()).split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!).files).toEqual([
      { id: file.id, name: 'bulk.png', mediaType: 'image/png', data: PNG.toString('base64') },
    ]);
    const imported = await fetch(`${t.url}/v1/import?format=canopy`, {
      method: 'POST',
      headers: { authorization: `Bearer ${b.key}`, 'content-type': 'application/x-ndjson' },
      body: lines.join('\n'),
    });
    const [report] = (await imported.text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { ok: boolean; id: string });
    expect(report).toMatchObject({ ok: true });
    const messages = (await b.api.get(`/v1/sessions/${report!.id}/messages`)).body;
    const block = (messages.data ?? messages).find((m: { role: string }) => m.role === 'user').content[1];
    const copy = await bytesOf(`${t.url}/v1/files/${block.fileId}/content`, b.key);
    expect(copy.bytes.equals(PNG)).toBe(true);
  });

  it('refuses an import whose attachments name a file the importing credential does not reach', async () => {
    const alice = (await a.api.post('/v1/tokens', { userId: 'alice' })).body.token as string;
    const mallory = (await a.api.post('/v1/tokens', { userId: 'mallory' })).body.token as string;
    const file = (await upload(a.api.as(alice), PDF, 'application/pdf', 'private.pdf')).body;
    const session = (await a.api.as(alice).post('/v1/sessions', { model: 'mock:echo' })).body.id;
    await a.api.as(alice).post(`/v1/sessions/${session}/prompt`, {
      content: [
        { type: 'text', text: 'mine' },
        { type: 'attachment', fileId: file.id },
      ],
      wait: true,
    });
    const doc = (await a.api.as(alice).get(`/v1/sessions/${session}/export?format=canopy`)).body;
    // The document without its files: its attachment names alice's file by id alone.
    const bare = { ...doc, files: undefined, session: { ...doc.session, id: undefined } };
    const stolen = await a.api.as(mallory).post('/v1/sessions/import', { format: 'canopy', data: bare });
    expectError(stolen, 400, 'bad_request');
    expect(stolen.body.error.details).toMatchObject({ field: 'data.files' });
    expectError(
      await b.api.post('/v1/sessions/import', { format: 'canopy', data: bare }),
      400,
      'bad_request',
    );
    // Alice herself may: her copy refers to the same file.
    const mine = await a.api.as(alice).post('/v1/sessions/import', { format: 'canopy', data: bare });
    expect(mine.status).toBe(201);
    const messages = (await a.api.as(alice).get(`/v1/sessions/${mine.body.id}/messages`)).body;
    const prompt = (messages.data ?? messages).find((m: { role: string }) => m.role === 'user');
    expect(prompt.content[1].fileId).toBe(file.id);
  });

  it('the OpenAI and Anthropic exports carry the bytes in their image and document parts', async () => {
    const png = (await upload(a.api, PNG, 'image/png', 'p.png')).body;
    const pdf = (await upload(a.api, PDF, 'application/pdf', 'd.pdf')).body;
    const session = (await a.api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    await a.api.post(`/v1/sessions/${session}/prompt`, {
      content: [
        { type: 'text', text: 'two files' },
        { type: 'attachment', fileId: png.id },
        { type: 'attachment', fileId: pdf.id },
      ],
      wait: true,
    });
    const openai = (await a.api.get(`/v1/sessions/${session}/export?format=openai`)).body;
    const user = openai.messages.find((m: { role: string }) => m.role === 'user');
    expect(user.content).toEqual([
      { type: 'text', text: 'two files' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } },
      {
        type: 'file',
        file: { filename: 'd.pdf', file_data: `data:application/pdf;base64,${PDF.toString('base64')}` },
      },
    ]);
    const anthropic = (await a.api.get(`/v1/sessions/${session}/export?format=anthropic`)).body;
    const first = anthropic.messages.find((m: { role: string }) => m.role === 'user');
    expect(first.content).toEqual([
      { type: 'text', text: 'two files' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') } },
      expect.objectContaining({
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: PDF.toString('base64') },
      }),
    ]);
  });
});

describe('on the embedded database', () => {
  it('stores, serves and sends a file with PGlite as the database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'canopy-files-embedded-'));
    const embedded = await startTestApp({ embeddedDataDir: dir });
    try {
      const tenant = await newTenant(embedded, 'embedded files');
      const big = randomBytes(700 * 1024);
      const file = await upload(tenant.api, big, 'application/octet-stream', 'big.bin');
      expect(file.body).toMatchObject({
        bytes: big.length,
        sha256: sha(big),
        mediaType: 'application/octet-stream',
      });
      const back = await bytesOf(`${embedded.url}/v1/files/${file.body.id}/content`, tenant.key);
      expect(back.bytes.equals(big)).toBe(true);
      const image = (await upload(tenant.api, PNG, 'image/png', 'e.png')).body;
      const session = (await tenant.api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
      const run = await tenant.api.post(`/v1/sessions/${session}/prompt`, {
        content: [
          { type: 'text', text: 'embedded' },
          { type: 'attachment', fileId: image.id },
        ],
        wait: true,
      });
      expect(run.status).toBe(200);
      expect(run.body.finalResponse).toBe('Echo: embedded');
    } finally {
      await embedded.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
