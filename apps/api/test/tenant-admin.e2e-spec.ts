// Tenant administration and the audit log over HTTP: the admin lists and searches tenants a page at a time,
// renames and disables one (its credentials then answer 403 tenant_disabled and its run in flight is cancelled),
// lists its keys; a tenant lists, creates (with a name and an expiry) and revokes its own keys; every such change
// leaves an audit event (who, what, request id) written with it, and GET /v1/audit shows a tenant only its own.

/* eslint-disable @typescript-eslint/no-unsafe-call -- JSON bodies read loosely */

import { eventually } from '@canopy/testing';
import { Api, newTenant, type ApiResponse } from './support/api-client';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';

let t: TestApp;
let admin: Api;

beforeAll(async () => {
  t = await startTestApp();
  admin = new Api(t.url, TEST_ADMIN_KEY);
});

afterAll(async () => {
  await t?.close();
});

function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
}

describe('GET /v1/admin/tenants', () => {
  it('pages through the tenants by name and searches by name', async () => {
    const names = ['pager-c', 'pager-a', 'pager-b', 'Pager-D', 'other'];
    for (const name of names) await newTenant(t, name);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: ApiResponse = await admin.get(
        `/v1/admin/tenants?q=PAGER&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((x: { name: string }) => x.name));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(['Pager-D', 'pager-a', 'pager-b', 'pager-c']);
    expectError(await admin.get('/v1/admin/tenants?cursor=garbage'), 400, 'bad_request');
  });
});

describe('tenant names', () => {
  it('are unique case-insensitively: creating or renaming to a taken name answers 409 tenant_name_taken', async () => {
    const first = await newTenant(t, 'Unique Co');
    for (const name of ['Unique Co', 'unique co', 'UNIQUE CO']) {
      const res = await admin.post('/v1/admin/tenants', { name });
      expectError(res, 409, 'tenant_name_taken');
      expect(res.body.error.message).toContain(name);
    }
    const second = await newTenant(t, 'Unique Co 2');
    expectError(
      await admin.patch(`/v1/admin/tenants/${second.tenantId}`, { name: 'uNIQUE cO', disabled: true }),
      409,
      'tenant_name_taken',
    );
    // Nothing changed by the refused rename (nor its disable, sent with it), and nothing was audited.
    const kept = await admin.get(`/v1/admin/tenants/${second.tenantId}`);
    expect(kept.body).toMatchObject({ name: 'Unique Co 2', disabled: false });
    const renames = await admin.get(`/v1/audit?tenantId=${second.tenantId}&action=tenant.rename`);
    expect(renames.body.data).toEqual([]);
    const listed = await admin.get('/v1/admin/tenants?q=unique%20co');
    expect(listed.body.data.map((x: { name: string }) => x.name)).toEqual(['Unique Co', 'Unique Co 2']);

    // A tenant may change the case of its own name; a freed name can be taken.
    const recased = await admin.patch(`/v1/admin/tenants/${first.tenantId}`, { name: 'UNIQUE CO' });
    expect(recased.status).toBe(200);
    expect(recased.body.name).toBe('UNIQUE CO');
    expect((await admin.patch(`/v1/admin/tenants/${first.tenantId}`, { name: 'Unique Co 1' })).status).toBe(
      200,
    );
    expect((await admin.patch(`/v1/admin/tenants/${second.tenantId}`, { name: 'unique co' })).status).toBe(
      200,
    );
    expect((await admin.post('/v1/admin/tenants', { name: 'Unique Co 2' })).status).toBe(201);
  });
});

describe('a tenant disabled by the admin', () => {
  it('answers 403 tenant_disabled to every credential, cancels its run in flight, and comes back when enabled', async () => {
    const tenant = await newTenant(t, 'to disable');
    const token = (await tenant.api.post('/v1/tokens', { userId: 'u1' })).body.token;
    const session = await tenant.api.post('/v1/sessions', {
      model: 'mock:script',
      opts: { script: [{ delayMs: 60_000 }, { text: 'late' }] },
    });
    const started = await tenant.api.post(`/v1/sessions/${session.body.id}/prompt`, { content: 'slow' });
    expect(started.status).toBe(202);

    const patched = await admin.patch(`/v1/admin/tenants/${tenant.tenantId}`, {
      disabled: true,
      name: 'renamed',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'renamed', disabled: true });
    expect(typeof patched.body.disabledAt).toBe('string');

    expectError(await tenant.api.get('/v1/sessions'), 403, 'tenant_disabled');
    expectError(await tenant.api.as(token).get('/v1/sessions'), 403, 'tenant_disabled');
    // The run in flight was cancelled (read as the admin: the tenant's own keys are refused).
    await eventually(async () => {
      const runs = await admin.get(`/v1/stats?minutes=5`);
      const run = runs.body.recentRuns.find((r: { runId: string }) => r.runId === started.body.runId);
      expect(run?.status).toBe('cancelled');
    });

    expect(
      (await admin.patch(`/v1/admin/tenants/${tenant.tenantId}`, { disabled: false })).body.disabled,
    ).toBe(false);
    expect((await tenant.api.get('/v1/sessions')).status).toBe(200);
    expect((await tenant.api.as(token).get('/v1/sessions')).status).toBe(200);

    const audit = await admin.get(`/v1/audit?tenantId=${tenant.tenantId}&action=tenant.`);
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual([
      'tenant.enable',
      'tenant.disable',
      'tenant.rename',
      'tenant.create',
    ]);
    const disable = audit.body.data[1];
    expect(disable).toMatchObject({
      tenantId: tenant.tenantId,
      actor: { type: 'admin' },
      targetType: 'tenant',
      targetId: tenant.tenantId,
      before: { disabled: false },
      after: { disabled: true },
    });
    expect(typeof disable.requestId).toBe('string');
  });
});

describe('API keys', () => {
  it('a tenant lists, creates (named, expiring) and revokes its own keys; the admin lists them too', async () => {
    const tenant = await newTenant(t, 'keys');
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const created = await tenant.api.post('/v1/keys', { name: 'ci', expiresAt });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'ci', expiresAt, prefix: created.body.apiKey.slice(0, 10) });
    const ci = new Api(t.url, created.body.apiKey);
    expect((await ci.get('/v1/sessions')).status).toBe(200);

    const listed = await tenant.api.get('/v1/keys');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((k: { name: string }) => k.name)).toEqual(['ci', 'default']);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.apiKey);
    const asAdmin = await admin.get(`/v1/admin/tenants/${tenant.tenantId}/keys`);
    expect(asAdmin.body.data).toHaveLength(2);
    await eventually(async () => {
      const keys = (await tenant.api.get('/v1/keys')).body.data;
      expect(keys.find((k: { id: string }) => k.id === created.body.id).lastUsedAt).not.toBeNull();
    });

    // Another tenant cannot revoke it; its owner can.
    const other = await newTenant(t, 'keys other');
    expectError(await other.api.delete(`/v1/keys/${created.body.id}`), 404, 'not_found');
    expect((await tenant.api.delete(`/v1/keys/${created.body.id}`)).status).toBe(204);
    expectError(await ci.get('/v1/sessions'), 401, 'unauthorized');
    const after = (await tenant.api.get('/v1/keys')).body.data.find(
      (k: { id: string }) => k.id === created.body.id,
    );
    expect(after).toMatchObject({ revoked: true });

    // A key past its expiry is refused; an expiry in the past is bad input.
    expectError(
      await tenant.api.post('/v1/keys', { expiresAt: new Date(Date.now() - 1000).toISOString() }),
      400,
      'bad_request',
    );
    const short = await tenant.api.post('/v1/keys', {
      name: 'short',
      expiresAt: new Date(Date.now() + 1500).toISOString(),
    });
    expect(short.status).toBe(201);
    await eventually(async () =>
      expectError(await new Api(t.url, short.body.apiKey).get('/v1/sessions'), 401, 'unauthorized'),
    );

    // The audit log: the tenant's key events, its own only, with the key that acted.
    const audit = await tenant.api.get('/v1/audit?action=key.');
    expect(audit.status).toBe(200);
    const actions = audit.body.data.map((e: { action: string }) => e.action);
    expect(actions).toEqual(['key.create', 'key.revoke', 'key.create', 'key.create']);
    expect(audit.body.data[1].actor).toEqual({ type: 'key', keyId: expect.any(String) });
    expect(audit.body.data.every((e: { tenantId: string }) => e.tenantId === tenant.tenantId)).toBe(true);
    expect(JSON.stringify(audit.body)).not.toContain(created.body.apiKey);
    const foreign = await other.api.get(`/v1/audit?targetId=${created.body.id}`);
    expect(foreign.body.data).toEqual([]);
    expectError(await other.api.get(`/v1/audit?tenantId=${tenant.tenantId}`), 400, 'bad_request');
  });
});

describe('the audit log', () => {
  it('records session deletions with their actor and request id, token issuance, and pages', async () => {
    const tenant = await newTenant(t, 'audited');
    const token = (await tenant.api.post('/v1/tokens', { userId: 'alice' })).body.token;
    const alice = tenant.api.as(token);
    const s1 = (await alice.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    const s2 = (await tenant.api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    const deleted = await alice.request('DELETE', `/v1/sessions/${s1}`, undefined, {
      'x-request-id': 'req-audit-1',
    });
    expect(deleted.status).toBe(204);
    expect((await tenant.api.post('/v1/sessions/delete', { ids: [s2] })).body.deleted).toBe(1);

    const sessions = (await tenant.api.get('/v1/audit?targetType=session')).body.data;
    expect(sessions).toEqual([
      expect.objectContaining({
        action: 'session.delete',
        targetId: s2,
        actor: { type: 'key', keyId: expect.any(String) },
      }),
      expect.objectContaining({
        action: 'session.delete',
        targetId: s1,
        actor: { type: 'user', userId: 'alice' },
        requestId: 'req-audit-1',
      }),
    ]);
    const tokens = (await tenant.api.get('/v1/audit?action=token.issue')).body.data;
    expect(tokens).toEqual([expect.objectContaining({ targetType: 'user', targetId: 'alice' })]);
    expect(JSON.stringify(tokens)).not.toContain(token);

    const first = await tenant.api.get('/v1/audit?limit=2');
    expect(first.body.data).toHaveLength(2);
    const second = await tenant.api.get(
      `/v1/audit?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`,
    );
    expect(second.body.data[0].id).not.toBe(first.body.data[1].id);
    expect(new Date(second.body.data[0].createdAt).getTime()).toBeLessThanOrEqual(
      new Date(first.body.data[1].createdAt).getTime(),
    );
    // A bulk cancel is recorded once, with the runs it stopped.
    const slow = (
      await tenant.api.post('/v1/sessions', { model: 'mock:script', opts: { script: [{ delayMs: 60_000 }] } })
    ).body.id;
    const run = (await tenant.api.post(`/v1/sessions/${slow}/prompt`, { content: 'slow' })).body.runId;
    await eventually(async () =>
      expect((await tenant.api.get(`/v1/sessions/${slow}`)).body.status).toBe('busy'),
    );
    expect((await tenant.api.post('/v1/sessions/cancel', { ids: [slow] })).body.cancelled).toBe(1);
    const bulk = (await tenant.api.get('/v1/audit?action=session.bulk_cancel')).body.data;
    expect(bulk).toEqual([expect.objectContaining({ after: { cancelled: 1, runIds: [run], more: false } })]);
    // User tokens do not read the audit log.
    expectError(await alice.get('/v1/audit'), 403, 'forbidden');
  });
});
