// The dashboard's per-model and per-user figures over a window of days, read from the daily rollup (run_stats_daily,
// kept by triggers on runs and feedback) at the grain asked for: one row per day and model (or user) that had any run
// or rating, so a year per model costs at most 366 rows per model, per user 366 per active user, however many runs
// they hold. Latency percentiles come from the rows' histograms summed bucket by bucket (64 buckets, each 25% wider
// than the one before: a percentile is within that of the exact one).

import { CanopyException } from '@canopy/common';
import type { ModelStatsRow } from '@canopy/core';
import { Database, type SqlTx } from '@canopy/store';

interface TotalsRow {
  key: string;
  runs: number;
  finished: number;
  errors: number;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  total_cost: number;
  thumbs_up: number;
  thumbs_down: number;
}

interface BucketRow {
  key: string;
  bucket: number;
  count: number;
}

/** A duration in bucket k (1-based) of canopy_latency_bucket, as the middle of its range (geometrically). */
export function bucketValue(bucket: number): number {
  if (bucket <= 1) return 5;
  const lower = 10 * 1.25 ** (bucket - 2);
  return Math.round(lower * Math.sqrt(1.25));
}

/** The p-th percentile (0..1) of a histogram (counts by bucket), or null when it is empty. */
export function percentileOf(histogram: ReadonlyMap<number, number>, p: number): number | null {
  const total = [...histogram.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (const bucket of [...histogram.keys()].sort((a, b) => a - b)) {
    seen += histogram.get(bucket)!;
    if (seen >= rank) return bucketValue(bucket);
  }
  return null;
}

/** sum(<column>[1])::int, ... sum(<column>[64])::int: trusted text, no input in it. */
const sums = (column: string) =>
  Array.from({ length: 64 }, (_, i) => `sum(${column}[${i + 1}])::int`).join(', ');

export class ModelStatsRepository {
  constructor(private readonly db: Database) {}

  /** The figures per model or per user over the UTC days from..to (inclusive); tenantId null: every tenant's. */
  async stats(
    tenantId: string | null,
    groupBy: 'model' | 'user',
    from: string,
    to: string,
  ): Promise<ModelStatsRow[]> {
    const read = (tx: SqlTx) => this.read(tx, tenantId, groupBy, from, to);
    const { totals, buckets } =
      tenantId === null
        ? await this.db.withAdminSql('the admin reads every tenant’s per-model figures', read)
        : await this.db.withTenantSql({ tenantId }, read);
    const histograms = new Map<string, Map<number, number>>();
    for (const b of buckets) {
      const histogram = histograms.get(b.key) ?? new Map<number, number>();
      histogram.set(b.bucket, b.count);
      histograms.set(b.key, histogram);
    }
    return totals.map((t) => {
      const histogram = histograms.get(t.key) ?? new Map<number, number>();
      const rated = t.thumbs_up + t.thumbs_down;
      const ttft = new Map(
        t.ttft.map((count, i) => [i + 1, count] as const).filter(([, count]) => count > 0),
      );
      return {
        key: t.key === '' ? null : t.key,
        runs: t.runs,
        errors: t.errors,
        errorRate: t.finished > 0 ? t.errors / t.finished : 0,
        latencyP50Ms: percentileOf(histogram, 0.5),
        latencyP95Ms: percentileOf(histogram, 0.95),
        timeToFirstTokenP50Ms: percentileOf(ttft, 0.5),
        timeToFirstTokenP95Ms: percentileOf(ttft, 0.95),
        inputTokens: t.input_tokens,
        outputTokens: t.output_tokens,
        totalTokens: t.total_tokens,
        totalCost: t.total_cost,
        thumbsUp: t.thumbs_up,
        thumbsDown: t.thumbs_down,
        thumbsUpShare: rated > 0 ? t.thumbs_up / rated : null,
      };
    });
  }

  private async read(
    tx: SqlTx,
    tenantId: string | null,
    groupBy: 'model' | 'user',
    from: string,
    to: string,
  ): Promise<{ totals: Array<TotalsRow & { ttft: number[] }>; buckets: BucketRow[] }> {
    if (groupBy !== 'model' && groupBy !== 'user') throw CanopyException.badRequest('groupBy: model or user');
    // The histograms summed in the same pass as the totals, one aggregate per bucket (a subscript per row is far
    // cheaper than unnesting every row's 64 counts and grouping them again).
    const rows = await tx.query<TotalsRow & { hist: number[]; ttft: number[] }>(
      `SELECT key, sum(runs)::int AS runs, sum(finished)::int AS finished, sum(errors)::int AS errors,
              sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
              sum(total_tokens) AS total_tokens, sum(total_cost) AS total_cost,
              sum(thumbs_up)::int AS thumbs_up, sum(thumbs_down)::int AS thumbs_down,
              ARRAY[${sums('latency_hist')}] AS hist, ARRAY[${sums('ttft_hist')}] AS ttft
         FROM run_stats_daily
        WHERE ($1::uuid IS NULL OR tenant_id = $1::uuid) AND grain = $4 AND day BETWEEN $2::date AND $3::date
        GROUP BY key ORDER BY sum(runs) DESC, key`,
      [tenantId, from, to, groupBy],
    );
    const buckets: BucketRow[] = [];
    for (const row of rows)
      row.hist.forEach((count, i) => count > 0 && buckets.push({ key: row.key, bucket: i + 1, count }));
    return { totals: rows, buckets };
  }
}
