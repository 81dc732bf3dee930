// Quotas and usage: the admin sets a tenant's quotas, a tenant its users'; both read them with their usage in the
// current period. A usage report sums the stored runs' usage over a window, grouped by day, user, model or session:
// a tenant key its own, the admin any tenant's or every tenant's.

import { Injectable } from '@nestjs/common';
import type { Quota } from '@canopy/store';
import { tenantReadBy, type Caller } from '../caller';
import { quotaOverview, type QuotaOverview } from './quota-overview';
import { QuotasRepository, type UsageGroup, type UsageRow } from './quotas.repository';
import { usageWindow } from './usage-window';

export interface UsageReport {
  from: string;
  to: string;
  groupBy: UsageGroup;
  data: UsageRow[];
  /** The stored files now (not over the window: what is kept, whenever it was uploaded). */
  storage: { bytes: number; files: number };
}

@Injectable()
export class QuotasService {
  constructor(private readonly quotas: QuotasRepository) {}

  /** The tenant's quotas and its users', each with its usage in the current period. */
  async overview(tenantId: string): Promise<QuotaOverview> {
    return quotaOverview(await this.quotas.status(tenantId));
  }

  /** Replaces the quotas of the tenant (userId null) or of one of its users; answers the overview then. */
  async set(tenantId: string, userId: string | null, quotas: Quota[]): Promise<QuotaOverview> {
    await this.quotas.set(tenantId, userId, quotas);
    return this.overview(tenantId);
  }

  /** Usage over the asked window (see usageWindow) of the tenant the caller may read (see tenantReadBy). */
  async usage(
    caller: Caller,
    asked: { from?: string; to?: string; tenantId?: string; groupBy: UsageGroup },
  ): Promise<UsageReport> {
    const { from, to } = usageWindow(asked);
    const tenantId = tenantReadBy(caller, asked.tenantId);
    const data = await this.quotas.usage(tenantId, { from, to, groupBy: asked.groupBy });
    const storage = await this.quotas.storage(tenantId);
    return { from: from.toISOString(), to: to.toISOString(), groupBy: asked.groupBy, data, storage };
  }
}
