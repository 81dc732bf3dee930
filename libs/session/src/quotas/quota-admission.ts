// Run admission by quotas: a new run of a session whose tenant (or whose user) has used up a quota answers 429
// quota_exceeded, saying which quota, its limit, the usage and when it resets. Counted from the stored usage, so
// it holds across every api of a deployment. Tokens and cost are decided here, before the run: runs admitted while
// usage is below the limit run to their end (a run in flight is never cut), so usage may pass the limit by what
// they use (the bound is in docs/api.md, Quotas). A runs quota is checked here too (an early answer, and a queued
// prompt refused when sent), but decided by the run's start itself (canopy_start_run counts the run against it
// under a lock, exact under any concurrency), whose refusal SessionService turns into the same answer.

import { CanopyException } from '@canopy/common';
import type { Scope } from '@canopy/core';
import type { QuotaMetric, QuotaStatus } from '@canopy/store';
import type { QuotasRepository } from '@canopy/tenancy';
import type { AdmissionKind, RunAdmission } from '../session-deps';

const UNITS: Record<QuotaStatus['metric'], string> = {
  tokens: 'tokens',
  cost: 'in cost',
  runs: 'runs',
  storage: 'bytes stored',
};

/** A steered prompt starts no run: only what it will use counts. */
const TURN_METRICS: readonly QuotaMetric[] = ['tokens', 'cost'];

export class QuotaAdmission implements RunAdmission {
  constructor(private readonly quotas: QuotasRepository) {}

  async admit(scope: Scope, sessionId: string, kind: AdmissionKind = 'run'): Promise<void> {
    const over = await this.quotas.exceeded(
      scope,
      sessionId,
      kind === 'turn' ? { metrics: TURN_METRICS } : {},
    );
    if (over) throw quotaExceeded(over);
  }
}

/** The 429 quota_exceeded answer for a quota used up. */
export function quotaExceeded(over: QuotaStatus): CanopyException {
  const who = over.userId === null ? 'this tenant' : `user ${over.userId}`;
  return new CanopyException(
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

function round(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
