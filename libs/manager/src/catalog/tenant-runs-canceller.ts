// The tenants feature's TenantRuns port (@canopy/tenancy), on the catalog: one bulk cancel of every session of the
// tenant that has a run in flight, wherever it executes.

import { tenantScope } from '@canopy/core';
import type { TenantRuns } from '@canopy/tenancy';
import type { SessionCatalogService } from './session-catalog.service';

export class TenantRunsCanceller implements TenantRuns {
  constructor(private readonly catalog: SessionCatalogService) {}

  async cancelInFlight(tenantId: string): Promise<{ cancelled: number; more: boolean }> {
    const { cancelled, more } = await this.catalog.cancelMany(tenantScope(tenantId), { filter: {} });
    return { cancelled, more };
  }
}
