// The SDK's find / fork / move / expire methods against the real service (its own Postgres database): typed
// search hits and counts with filters, a user token's limits, fork and export in every format, import of one
// conversation and of many (NDJSON, with per-line reports), bulk export resumed with exportCursorOf, bulk delete
// and cancel, pin, and the admin's retention policy.

import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../../apps/api/test/support/test-app';
import { Canopy, exportCursorOf, isCanopyError, type CanopyDocument } from './index';

let t: TestApp;
let admin: Canopy;
let canopy: Canopy;
let tenantId: string;

beforeAll(async () => {
  t = await startTestApp();
  admin = new Canopy({ baseUrl: t.url, credential: TEST_ADMIN_KEY });
  const tenant = await admin.admin.createTenant('sdk catalog');
  tenantId = tenant.id;
  canopy = new Canopy({ baseUrl: t.url, credential: tenant.apiKey });
});

afterAll(async () => {
  await t?.close();
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

it('searches and counts with filters; a user token only its own', async () => {
  const { session: a } = await canopy.sessions.create({
    model: 'mock:echo',
    userId: 'alice',
    metadata: { tier: 'gold' },
  });
  const { session: b } = await canopy.sessions.create({
    model: 'mock:echo',
    userId: 'bob',
    metadata: { tier: 'silver' },
  });
  await a.run('ship the release notes');
  await b.run('ship the docker image');

  const page = await canopy.sessions.search('ship', { metadataAny: { tier: ['gold', 'silver'] }, limit: 1 });
  expect(page.data).toHaveLength(1);
  expect(page.data[0]!.snippet.highlights.length).toBeGreaterThan(0);
  const next = await canopy.sessions.search('ship', {
    metadataAny: { tier: ['gold', 'silver'] },
    cursor: page.nextCursor!,
  });
  expect([page.data[0]!.session.id, next.data[0]!.session.id].sort()).toEqual([a.id, b.id].sort());
  expect((await canopy.sessions.search('"release notes"')).data.map((h) => h.session.id)).toEqual([a.id]);
  expect(await canopy.sessions.count({ q: 'ship', metadata: { tier: 'gold' } })).toBe(1);
  expect((await canopy.sessions.list({ status: ['idle'], userId: 'bob' })).data.map((s) => s.id)).toEqual([
    b.id,
  ]);

  const alice = new Canopy({ baseUrl: t.url, credential: (await canopy.tokens.create('alice')).token });
  expect((await alice.sessions.search('ship')).data.map((h) => h.session.id)).toEqual([a.id]);
  expect(await alice.sessions.count()).toBe(1);
});

it('forks, pins, exports in every format and imports', async () => {
  const { session } = await canopy.sessions.create({ model: 'mock:echo', title: 'to fork' });
  await session.run('one');
  await session.run('two');
  const { session: fork, info } = await session.fork({ nodeId: 2, title: 'forked' });
  expect(info.metadata).toEqual({ forkedFrom: { sessionId: session.id, nodeId: 2 } });
  expect((await fork.tree()).path).toEqual([1, 2]);
  expect((await fork.pin()).pinned).toBe(true);

  const canopyDoc = await session.export();
  expect(canopyDoc.tree.nodes).toHaveLength(4);
  const openai = await session.export('openai');
  expect(openai.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  const anthropic = await session.export('anthropic');
  expect(anthropic.messages[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'one' }] });
  expect(await session.export('markdown')).toContain('Echo: two');

  const { info: copy } = await canopy.sessions.import({
    format: 'openai',
    data: openai,
    metadata: { copy: true },
  });
  expect(copy).toMatchObject({ model: 'openai:echo', metadata: { copy: true } });
  try {
    await canopy.sessions.import({ format: 'canopy', data: canopyDoc });
    throw new Error('imported a taken id');
  } catch (err) {
    expect(isCanopyError(err, 'already_exists')).toBe(true);
  }
});

it('exports everything as a stream, resumes by cursor, imports many with a report per line', async () => {
  const all = await collect(canopy.sessions.exportAll());
  expect(all.length).toBeGreaterThanOrEqual(4);
  const rest = await collect(canopy.sessions.exportAll({ cursor: exportCursorOf(all[0]!) }));
  expect(rest.map((d) => d.session.id)).toEqual(all.slice(1).map((d) => d.session.id));

  const other = await admin.admin.createTenant('sdk target');
  const target = new Canopy({ baseUrl: t.url, credential: other.apiKey });
  const bad: CanopyDocument = { ...all[0]!, tree: { ...all[0]!.tree, path: [12345] } };
  const result = await target.sessions.importMany([all[0], bad, all[1]]);
  expect(result).toMatchObject({ imported: 2, failed: 1 });
  expect(result.reports[1]).toMatchObject({
    line: 2,
    ok: false,
    error: { code: 'bad_request', field: 'data.tree.path[0]' },
  });
  expect(await target.sessions.count()).toBe(2);
});

it('deletes and cancels in bulk, and sets a tenant’s retention', async () => {
  const { session: busy } = await canopy.sessions.create({
    model: 'mock:echo',
    opts: { delayMs: 50 },
    metadata: { bulk: 'y' },
  });
  await busy.prompt('a b c d e f g h i j k l m n o p');
  const cancelled = await canopy.sessions.cancelMany({ ids: [busy.id] });
  expect(cancelled.cancelled).toBe(1);
  const deleted = await canopy.sessions.deleteMany({ filter: { metadata: { bulk: 'y' } } });
  expect(deleted).toEqual({ deleted: 1, ids: [busy.id], more: false });

  const set = await admin.admin.setRetention(tenantId, { deleteAfterDays: 90 });
  expect(set.retention).toEqual({ deleteAfterDays: 90, keep: 'pinned' });
  expect((await admin.admin.getTenant(tenantId)).retention.deleteAfterDays).toBe(90);
});
