// The admin's use cases on tenants: create (with a first API key), list and search, read, and update. An update is
// one transaction for what it changes in the tables (name, state, retention policy, their audit events); what
// reaches beyond the database follows the commit: the credential caches and open connections learn of a disabled
// (or enabled) tenant, and a disabled tenant's runs in flight are cancelled.

import { Inject, Injectable } from '@nestjs/common';
import { CanopyException } from '@canopy/common';
import { CREDENTIAL_CHANGES, type CredentialChanges } from './credential-changes.port';
import { TENANT_RUNS, type TenantRuns } from './tenant-runs.port';
import {
  TenantsRepository,
  type TenantPage,
  type TenantRecord,
  type TenantUpdate,
  type TenantView,
} from './tenants.repository';

/** At most this many batches of cancels (of up to 500 runs each) when a tenant is disabled. */
export const DISABLE_CANCEL_ROUNDS = 20;

@Injectable()
export class TenantsService {
  constructor(
    private readonly tenants: TenantsRepository,
    @Inject(CREDENTIAL_CHANGES) private readonly credentials: CredentialChanges,
    @Inject(TENANT_RUNS) private readonly runs: TenantRuns,
  ) {}

  create(name: string): Promise<{ tenant: TenantRecord; apiKey: string; keyId: string }> {
    return this.tenants.createTenant(name);
  }

  list(input: { limit: number; q?: string; cursor?: string }): Promise<TenantPage> {
    return this.tenants.listTenants(input);
  }

  async get(tenantId: string): Promise<TenantView> {
    const tenant = await this.tenants.detail(tenantId);
    if (!tenant) throw CanopyException.notFound('tenant');
    return tenant;
  }

  /**
   * Renames, disables or enables, and sets the retention policy of a tenant (one transaction); then tells every
   * process of a change of state, and cancels a disabled tenant's runs in flight. Answers the tenant as updated.
   */
  async update(tenantId: string, input: TenantUpdate): Promise<TenantView> {
    const tenant = await this.tenants.update(tenantId, input);
    if (input.disabled !== undefined) await this.credentials.tenantChanged(tenantId, input.disabled);
    if (input.disabled === true) {
      for (let round = 0; round < DISABLE_CANCEL_ROUNDS; round++) {
        const { more } = await this.runs.cancelInFlight(tenantId);
        if (!more) break;
      }
    }
    return tenant;
  }
}
