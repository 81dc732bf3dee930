// Latency figures every bench section reports: the nearest-rank percentile of a sample, a sample's p50 / p99 / max,
// and the spread of a figure over repeated runs.

/** The nearest-rank percentile (0 < p <= 100) of ascending values; null when there are none. */
export function percentile(sorted: ArrayLike<number>, p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export interface LatencySummary {
  count: number;
  /** NaN when there are no values. */
  p50: number;
  p99: number;
  max: number;
}

/** p50, p99 and max of the values (in any order; they are not changed). */
export function summarise(values: Iterable<number>): LatencySummary {
  const sorted = Float64Array.from(values).sort();
  return {
    count: sorted.length,
    p50: percentile(sorted, 50) ?? Number.NaN,
    p99: percentile(sorted, 99) ?? Number.NaN,
    max: sorted.length > 0 ? sorted[sorted.length - 1]! : Number.NaN,
  };
}

/** `min–max` of the known values (one value alone when they agree); '-' when none is known. */
export function spread(values: ReadonlyArray<number | null>, format: (v: number) => string): string {
  const known = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (known.length === 0) return '-';
  const lo = format(Math.min(...known));
  const hi = format(Math.max(...known));
  return lo === hi ? lo : `${lo}–${hi}`;
}
