// The SDK's SaaS methods against the real service: the admin pages tenants, renames and disables one, sets its
// quotas; the tenant manages its keys, webhooks (with a local receiver), user quotas and provider keys, reads its
// usage and audit log; a prompt over quota throws CanopyError quota_exceeded at once (not retried).

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../../apps/api/test/support/test-app';
import { eventually } from '@canopy/testing';
import { Canopy, CanopyError } from './index';

let t: TestApp;
let admin: Canopy;
let receiver: Server;
let receiverUrl: string;
const received: string[] = [];

beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_MS: '50' } });
  admin = new Canopy({ baseUrl: t.url, credential: TEST_ADMIN_KEY });
  receiver = createServer((req, res) => {
    received.push(String(req.headers['webhook-id']));
    req.resume();
    res.writeHead(200).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  await t?.close();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

it('covers tenant administration, keys, webhooks, quotas, usage, provider keys and the audit log', async () => {
  const created = await admin.admin.createTenant('sdk saas');
  const page = await admin.admin.tenantsPage({ q: 'SDK SAAS', limit: 10 });
  expect(page.data.map((x) => x.id)).toContain(created.id);
  expect(page.nextCursor).toBeNull();
  const canopy = new Canopy({ baseUrl: t.url, credential: created.apiKey });

  // Keys.
  const key = await canopy.keys.create({ name: 'ci' });
  expect(key.apiKey).toMatch(/^ck_/);
  expect((await canopy.keys.list()).map((k) => k.name)).toEqual(['ci', 'default']);
  expect(await admin.admin.listKeys(created.id)).toHaveLength(2);
  await canopy.keys.revoke(key.id);
  expect((await canopy.keys.list()).find((k) => k.id === key.id)?.revoked).toBe(true);

  // Webhooks.
  const hook = await canopy.webhooks.create({ url: receiverUrl, events: ['session.created'] });
  expect(hook.secret).toMatch(/^whsec_/);
  const { info } = await canopy.sessions.create({ model: 'mock:echo', userId: 'ann' });
  await eventually(async () =>
    expect((await canopy.webhooks.deliveries(hook.id))[0]?.status).toBe('delivered'),
  );
  const [delivery] = await canopy.webhooks.deliveries(hook.id);
  expect(delivery!.payload.data.sessionId).toBe(info.id);
  expect(received).toContain(`msg_${delivery!.id}`);
  await canopy.webhooks.retry(hook.id, delivery!.id);
  await eventually(() => expect(received.filter((id) => id === `msg_${delivery!.id}`)).toHaveLength(2));
  expect((await canopy.webhooks.update(hook.id, { enabled: false })).enabled).toBe(false);
  expect(await canopy.webhooks.list()).toHaveLength(1);
  await canopy.webhooks.delete(hook.id);

  // Quotas and usage.
  await canopy.quotas.setUser('ann', [{ metric: 'runs', period: 'day', limit: 1 }]);
  const session = canopy.session(info.id);
  await session.run('hello');
  const over = await session.run('again').catch((err: unknown) => err);
  expect(over).toBeInstanceOf(CanopyError);
  expect((over as CanopyError).code).toBe('quota_exceeded');
  expect((await canopy.quotas.get()).users).toEqual([
    { userId: 'ann', quotas: [expect.objectContaining({ metric: 'runs', limit: 1, usage: 1 })] },
  ]);
  expect((await canopy.usage.get({ groupBy: 'user' })).data).toEqual([
    expect.objectContaining({ key: 'ann', runs: 1 }),
  ]);
  const tenantQuotas = await admin.admin.setQuotas(created.id, [
    { metric: 'tokens', period: 'month', limit: 1e6 },
  ]);
  expect(tenantQuotas.tenant).toEqual([expect.objectContaining({ metric: 'tokens', limit: 1e6 })]);
  expect((await admin.admin.getQuotas(created.id)).tenant).toHaveLength(1);

  // Provider keys.
  const provider = await canopy.providers.put('openai', {
    apiKey: 'sk-sdk-own-key-9876',
    models: ['gpt-own'],
  });
  expect(provider).toMatchObject({ provider: 'openai', keyHint: '9876', models: ['gpt-own'] });
  expect((await canopy.models()).map((m) => m.id)).toContain('openai:gpt-own');
  expect(await canopy.providers.list()).toHaveLength(1);
  expect((await canopy.providers.get('openai')).keyHint).toBe('9876');
  await canopy.providers.delete('openai');

  // Administration and the audit log.
  const renamed = await admin.admin.updateTenant(created.id, { name: 'sdk saas renamed', disabled: true });
  expect(renamed).toMatchObject({ name: 'sdk saas renamed', disabled: true });
  const refused = await canopy.sessions.list().catch((err: unknown) => err);
  expect((refused as CanopyError).code).toBe('tenant_disabled');
  await admin.admin.updateTenant(created.id, { disabled: false });
  const audit = await canopy.audit.list({ limit: 100 });
  const actions = audit.data.map((e) => e.action);
  for (const action of ['key.revoke', 'webhook.create', 'quota.set', 'provider_key.create', 'tenant.disable'])
    expect(actions).toContain(action);
  expect((await admin.audit.list({ tenantId: created.id, action: 'tenant.' })).data.length).toBeGreaterThan(
    2,
  );
});
