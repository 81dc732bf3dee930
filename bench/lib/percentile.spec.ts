import { percentile, spread, summarise } from './percentile';

describe('percentile', () => {
  it('takes the nearest rank of ascending values', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile(values, 100)).toBe(100);
    expect(percentile(Float64Array.from([1, 2, 3]), 50)).toBe(2);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNull();
  });

  it('summarises a sample in any order without changing it, NaN for an empty one', () => {
    const values = [30, 10, 20];
    expect(summarise(values)).toEqual({ count: 3, p50: 20, p99: 30, max: 30 });
    expect(values).toEqual([30, 10, 20]);
    expect(summarise([])).toEqual({ count: 0, p50: Number.NaN, p99: Number.NaN, max: Number.NaN });
  });

  it('prints the spread of the known values', () => {
    const x = (v: number) => `x${v.toFixed(2)}`;
    expect(spread([1.5, null, 3], x)).toBe('x1.50–x3.00');
    expect(spread([2, 2], x)).toBe('x2.00');
    expect(spread([null, Number.NaN], x)).toBe('-');
  });
});
