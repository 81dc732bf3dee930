// Run admission by quotas: a new run of a session whose tenant (or whose user) has used up a quota answers 429
// quota_exceeded, saying which quota, its limit, the usage and when it resets. Counted from the stored runs, so
// it holds across every api of a deployment (runs racing the last unit of a quota may each start: a soft limit).

import { CanopyException } from '@canopy/common';
import type { Scope } from '@canopy/core';
import type { QuotasRepository, QuotaStatus } from '@canopy/store';
import type { RunAdmission } from '../session-deps';

const UNITS: Record<QuotaStatus['metric'], string> = { tokens: 'tokens', cost: 'in cost', runs: 'runs' };

export class QuotaAdmission implements RunAdmission {
  constructor(private readonly quotas: QuotasRepository) {}

  async admit(scope: Scope, sessionId: string): Promise<void> {
    const over = await this.quotas.exceeded(scope, sessionId);
    if (!over) return;
    const who = over.userId === null ? 'this tenant' : `user ${over.userId}`;
    throw new CanopyException(
      'quota_exceeded',
      `quota exceeded: ${over.limit} ${UNITS[over.metric]} per ${over.period} for ${who} (used ${round(over.usage)}); resets at ${over.resetsAt}`,
      {
        scope: over.userId === null ? 'tenant' : 'user',
        ...(over.userId !== null ? { userId: over.userId } : {}),
        metric: over.metric,
        period: over.period,
        limit: over.limit,
        usage: round(over.usage),
        resetsAt: over.resetsAt,
      },
    );
  }
}

function round(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
