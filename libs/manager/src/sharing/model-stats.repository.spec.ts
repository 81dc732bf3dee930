// Percentiles read from the rollup's latency histograms: a bucket's value is the middle of its range, the percentile
// the bucket where the rank falls, within a bucket's width of the exact value.

import { bucketValue, percentileOf } from './model-stats.repository';

/** canopy_latency_bucket, as the SQL function computes it. */
function bucketOf(ms: number): number {
  return ms < 10 ? 1 : Math.min(64, 2 + Math.floor(Math.log(ms / 10) / Math.log(1.25)));
}

describe('the latency histogram', () => {
  it("gives each bucket a value inside its range, within a bucket's width of any duration in it", () => {
    for (const ms of [1, 9, 10, 12, 100, 999, 1_000, 12_345, 300_000]) {
      const value = bucketValue(bucketOf(ms));
      if (ms < 10) expect(value).toBe(5);
      else {
        expect(bucketOf(value)).toBe(bucketOf(ms));
        expect(Math.abs(value - ms) / ms).toBeLessThanOrEqual(0.25);
      }
    }
  });

  it('reads p50 and p95 from summed counts', () => {
    const durations = Array.from({ length: 100 }, (_, i) => (i + 1) * 10); // 10 ms .. 1,000 ms
    const histogram = new Map<number, number>();
    for (const d of durations) histogram.set(bucketOf(d), (histogram.get(bucketOf(d)) ?? 0) + 1);
    const p50 = percentileOf(histogram, 0.5)!;
    const p95 = percentileOf(histogram, 0.95)!;
    expect(Math.abs(p50 - 500) / 500).toBeLessThanOrEqual(0.25);
    expect(Math.abs(p95 - 950) / 950).toBeLessThanOrEqual(0.25);
    expect(percentileOf(new Map(), 0.5)).toBeNull();
    expect(percentileOf(new Map([[3, 1]]), 0.95)).toBe(bucketValue(3));
  });
});
