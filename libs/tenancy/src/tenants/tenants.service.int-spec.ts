// The admin's update of a tenant through its service, against the real database: what it changes in the tables is
// one transaction (a name another tenant has leaves the state and the retention policy untouched too), and what
// reaches beyond the database (the credential notice, the cancels of a disabled tenant's runs) follows the commit.

import { createTestDatabase, type TestDatabase } from '@canopy/testing';
import { Database } from '@canopy/store';
import { AuditRepository } from '../audit/audit.repository';
import type { CredentialChanges } from './credential-changes.port';
import type { TenantRuns } from './tenant-runs.port';
import { TenantsRepository } from './tenants.repository';
import { DISABLE_CANCEL_ROUNDS, TenantsService } from './tenants.service';

let testDb: TestDatabase;
let db: Database;
let tenants: TenantsRepository;
let audit: AuditRepository;

beforeAll(async () => {
  testDb = await createTestDatabase();
  db = new Database({ url: testDb.url, poolMax: 4, txMaxWaitMs: 5_000, txTimeoutMs: 10_000 });
  tenants = new TenantsRepository(db);
  audit = new AuditRepository(db);
});

afterAll(async () => {
  await db?.disconnect();
  await testDb?.drop();
});

/** The ports as the layers above answer them, recording what they were told and what the tables held then. */
function ports(cancelBatches: boolean[] = [false]) {
  const told: string[] = [];
  const credentials: CredentialChanges = {
    keyRevoked: (tenantId, keyId) => {
      told.push(`key ${keyId} revoked`);
      return Promise.resolve();
    },
    tenantChanged: async (tenantId, disabled) => {
      const stored = await tenants.detail(tenantId);
      told.push(
        `tenant ${disabled ? 'disabled' : 'enabled'} (stored disabled: ${stored?.disabledAt != null})`,
      );
    },
  };
  let round = 0;
  const runs: TenantRuns = {
    cancelInFlight: () => {
      const more = cancelBatches[Math.min(round, cancelBatches.length - 1)]!;
      round++;
      told.push('cancel');
      return Promise.resolve({ cancelled: 1, more });
    },
  };
  return { told, service: new TenantsService(tenants, credentials, runs) };
}

async function actions(tenantId: string): Promise<string[]> {
  const page = await audit.listForTenant({ tenantId }, { limit: 50, action: 'tenant.' });
  return page.data.map((e) => e.action).sort();
}

it('renames, disables and sets the retention policy in one transaction, then tells and cancels', async () => {
  const { told, service } = ports([true, true, false]);
  const { tenant } = await service.create(`svc-${Date.now()}`);
  const name = `renamed-${tenant.id.slice(0, 8)}`;

  const updated = await service.update(tenant.id, {
    name,
    disabled: true,
    retention: { deleteAfterDays: 30, keep: 'none' },
  });

  expect(updated).toMatchObject({ id: tenant.id, name, retention: { deleteAfterDays: 30, keep: 'none' } });
  expect(updated.disabledAt).toBeInstanceOf(Date);
  expect(await service.get(tenant.id)).toEqual(updated);
  // The notice went out once the change was committed; the cancels ran until no batch was left.
  expect(told).toEqual(['tenant disabled (stored disabled: true)', 'cancel', 'cancel', 'cancel']);
  expect(await actions(tenant.id)).toEqual([
    'tenant.create',
    'tenant.disable',
    'tenant.rename',
    'tenant.retention',
  ]);
});

it('changes nothing when the name is taken, and tells nobody', async () => {
  const { told, service } = ports();
  const taken = await service.create(`taken-${Date.now()}`);
  const { tenant } = await service.create(`other-${Date.now()}`);

  await expect(
    service.update(tenant.id, {
      name: taken.tenant.name.toUpperCase(),
      disabled: true,
      retention: { deleteAfterDays: 7, keep: 'pinned' },
    }),
  ).rejects.toMatchObject({ code: 'tenant_name_taken' });

  expect(await service.get(tenant.id)).toMatchObject({
    name: tenant.name,
    disabledAt: null,
    retention: { deleteAfterDays: null, keep: 'pinned' },
  });
  expect(told).toEqual([]);
  expect(await actions(tenant.id)).toEqual(['tenant.create']);
});

it(`cancels at most ${DISABLE_CANCEL_ROUNDS} batches of a disabled tenant's runs`, async () => {
  const { told, service } = ports([true]);
  const { tenant } = await service.create(`busy-${Date.now()}`);
  await service.update(tenant.id, { disabled: true });
  expect(told.filter((t) => t === 'cancel')).toHaveLength(DISABLE_CANCEL_ROUNDS);
});

it('tells of an enabled tenant without cancelling, and of nothing for a retention policy alone', async () => {
  const { told, service } = ports();
  const { tenant } = await service.create(`quiet-${Date.now()}`);
  await service.update(tenant.id, { retention: { deleteAfterDays: 90, keep: 'pinned' } });
  expect(told).toEqual([]);
  await service.update(tenant.id, { disabled: true });
  told.length = 0;
  const enabled = await service.update(tenant.id, { disabled: false });
  expect(enabled.disabledAt).toBeNull();
  expect(told).toEqual(['tenant enabled (stored disabled: false)']);
});

it('answers not_found for an unknown tenant, changing nothing and telling nobody', async () => {
  const { told, service } = ports();
  await expect(
    service.update('00000000-0000-4000-8000-000000000000', { disabled: true }),
  ).rejects.toMatchObject({ code: 'not_found' });
  await expect(service.get('not-a-uuid')).rejects.toMatchObject({ code: 'not_found' });
  expect(told).toEqual([]);
});
