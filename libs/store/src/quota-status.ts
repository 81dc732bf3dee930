// What a quota is and how it stands in its period. The store owns these because canopy_start_run decides a runs
// quota itself and the session store port answers its refusal with the quota's status; the quotas feature
// (@canopy/tenancy) sets and measures quotas with the same types.

/** `storage`: the bytes of the stored files now (its period only says when the line is reported as resetting). */
export type QuotaMetric = 'tokens' | 'cost' | 'runs' | 'storage';
export type QuotaPeriod = 'day' | 'month';

export interface Quota {
  metric: QuotaMetric;
  period: QuotaPeriod;
  limit: number;
}

export interface QuotaStatus extends Quota {
  /** Null for the tenant's own quotas. */
  userId: string | null;
  usage: number;
  resetsAt: string;
}

export function periodStart(period: QuotaPeriod, now = new Date()): Date {
  return period === 'day'
    ? new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()))
    : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

export function periodEnd(period: QuotaPeriod, now = new Date()): Date {
  return period === 'day'
    ? new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1))
    : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

/** A runs quota used up, as canopy_start_run answers it when it refuses a run. */
export interface RunsQuotaRow {
  userId: string | null;
  period: QuotaPeriod;
  limit: number;
  usage: number;
}

export function runsQuotaStatus(row: RunsQuotaRow, now = new Date()): QuotaStatus {
  return {
    metric: 'runs',
    period: row.period,
    limit: Number(row.limit),
    userId: row.userId,
    usage: Number(row.usage),
    resetsAt: periodEnd(row.period, now).toISOString(),
  };
}
