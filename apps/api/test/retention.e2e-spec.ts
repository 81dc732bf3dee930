// Retention over HTTP: the admin sets a tenant's policy, sessions may be pinned, and the sweeper (here every
// 300 ms, the embedded runtime's interval timer) deletes the tenant's idle sessions older than the policy,
// announcing each as `closed {reason: "expired"}` on the activity feed and counting it in /metrics, while pinned
// ones (when the policy keeps them), recent ones and other tenants' stay. Expired sessions never show again.

/* eslint-disable @typescript-eslint/no-unsafe-return -- JSON bodies of any shape, read loosely by tests */

import { toCanopyDocument, type SessionInfo } from '@canopy/core';
import { eventually } from '@canopy/testing';
import { Api, newTenant, SseReader } from './support/api-client';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';

let t: TestApp;
let admin: Api;

beforeAll(async () => {
  t = await startTestApp({ env: { RETENTION_SWEEP_INTERVAL_MS: '300', RETENTION_SWEEP_BATCH: '2' } });
  admin = new Api(t.url, TEST_ADMIN_KEY);
});

afterAll(async () => {
  await t?.close();
});

/** Imports an old conversation (its updatedAt days ago) with the words given. */
async function old(api: Api, days: number, text: string, extra: Partial<SessionInfo> = {}): Promise<string> {
  const at = new Date(Date.now() - days * 86_400_000).toISOString();
  const doc = toCanopyDocument(
    {
      id: `s${Math.random().toString(36).slice(2)}`,
      title: text,
      model: 'mock:echo',
      system: null,
      opts: {},
      tools: [],
      metadata: {},
      userId: null,
      status: 'idle',
      pinned: false,
      createdAt: at,
      updatedAt: at,
      ...extra,
    },
    {
      nodes: [
        {
          id: 1,
          parentId: null,
          message: { role: 'user', content: [{ type: 'text', text }], timestamp: 0 },
          usage: null,
        },
      ],
      path: [1],
      cursors: {},
      nextId: 2,
    },
  );
  const res = await api.post('/v1/sessions/import', { format: 'canopy', data: doc });
  expect(res.status).toBe(201);
  return res.body.id;
}

it('deletes what the policy says, in batches, announcing each and counting it; keeps pinned, fresh and other tenants’ sessions', async () => {
  const { api, tenantId, key } = await newTenant(t, 'retained');
  const { api: otherApi } = await newTenant(t, 'no policy');
  const stale = [
    await old(api, 40, 'stale one'),
    await old(api, 40, 'stale two'),
    await old(api, 31, 'stale three'),
  ];
  const pinned = await old(api, 40, 'pinned one', { pinned: true });
  const recent = await old(api, 10, 'recent one');
  const fresh = (await api.post('/v1/sessions', { model: 'mock:echo' })).body.id as string;
  const pinnedByPatch = await api.patch(`/v1/sessions/${fresh}`, { pinned: true });
  expect(pinnedByPatch.body.pinned).toBe(true);
  const othersOld = await old(otherApi, 400, 'other tenant');

  expect((await admin.get(`/v1/admin/tenants/${tenantId}`)).body).toMatchObject({
    id: tenantId,
    retention: { deleteAfterDays: null, keep: 'pinned' },
  });
  const feed = await SseReader.open(`${t.url}/v1/activity`, { authorization: `Bearer ${key}` });
  try {
    const set = await admin.patch(`/v1/admin/tenants/${tenantId}`, { retention: { deleteAfterDays: 30 } });
    expect(set.status).toBe(200);
    expect(set.body.retention).toEqual({ deleteAfterDays: 30, keep: 'pinned' });

    await eventually(
      () => {
        const expired = feed.events.filter((e) => e.event === 'closed' && e.data.reason === 'expired');
        expect(expired.map((e) => e.data.id).sort()).toEqual([...stale].sort());
      },
      { timeoutMs: 10_000 },
    );
    for (const id of stale) {
      expect((await api.get(`/v1/sessions/${id}`)).status).toBe(404);
    }
    expect((await api.get('/v1/sessions/search?q=stale')).body.data).toEqual([]);
    for (const id of [pinned, recent, fresh]) expect((await api.get(`/v1/sessions/${id}`)).status).toBe(200);
    expect((await otherApi.get(`/v1/sessions/${othersOld}`)).status).toBe(200);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/^canopy_sessions_expired_total 3$/m);

    // Keeping nothing: the pinned one goes too (the fresh one stays: it is recent).
    await admin.patch(`/v1/admin/tenants/${tenantId}`, { retention: { deleteAfterDays: 30, keep: 'none' } });
    await eventually(async () => expect((await api.get(`/v1/sessions/${pinned}`)).status).toBe(404), {
      timeoutMs: 10_000,
    });
    expect((await api.get(`/v1/sessions/${fresh}`)).status).toBe(200);
  } finally {
    feed.close();
  }
});

it('answers not_found for an unknown tenant and 400 naming the field for a bad policy', async () => {
  expect((await admin.get('/v1/admin/tenants/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  const { tenantId } = await newTenant(t, 'bad policy');
  const bad = await admin.patch(`/v1/admin/tenants/${tenantId}`, { retention: { deleteAfterDays: 0 } });
  expect(bad.status).toBe(400);
  expect(JSON.stringify(bad.body.error.details)).toContain('retention');
});
