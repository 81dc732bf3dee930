// How a tenant's quotas are answered: its own, then each of its users' with theirs, every quota with its usage in
// the current period and when that ends.

import type { QuotaStatus } from '@canopy/store';

export interface QuotaLine {
  metric: QuotaStatus['metric'];
  period: QuotaStatus['period'];
  limit: number;
  usage: number;
  resetsAt: string;
}

export interface QuotaOverview {
  tenant: QuotaLine[];
  users: Array<{ userId: string; quotas: QuotaLine[] }>;
}

/** The quotas grouped: the tenant's own, then by user (in the order the users first appear). */
export function quotaOverview(all: readonly QuotaStatus[]): QuotaOverview {
  const line = (q: QuotaStatus): QuotaLine => ({
    metric: q.metric,
    period: q.period,
    limit: q.limit,
    usage: q.usage,
    resetsAt: q.resetsAt,
  });
  const users = new Map<string, QuotaLine[]>();
  for (const q of all) if (q.userId !== null) users.set(q.userId, [...(users.get(q.userId) ?? []), line(q)]);
  return {
    tenant: all.filter((q) => q.userId === null).map(line),
    users: [...users].map(([userId, quotas]) => ({ userId, quotas })),
  };
}
