// The section's pure helpers. The modules it prints and starts processes with are ES modules (tinybench behind
// ./report, the service's start flags) that jest cannot require; these tests use neither.
jest.mock('./report', () => ({}));
jest.mock('../scripts/lib/service-process.mjs', () => ({}));

import {
  bulkImportOutcome,
  deliveryFigures,
  errorText,
  fairnessOptions,
  fairnessVerdict,
  kindFigures,
  p99Ratio,
  percentile,
  spread,
} from './fairness.bench';

describe('fairness bench figures', () => {
  it('takes the nearest-rank percentile of ascending values', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile(values, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNull();
  });

  it('keeps latencies to the 2xx answers and counts the others by status and code', () => {
    const f = kindFigures([
      { ms: 10, status: 200, code: null },
      { ms: 30, status: 201, code: null },
      { ms: 5, status: 503, code: 'unavailable' },
      { ms: 9_000, status: 503, code: 'unavailable' },
      { ms: 60_000, status: 0, code: 'timeout' },
    ]);
    expect(f).toMatchObject({ ok: 2, p50Ms: 10, p99Ms: 30, maxMs: 30, failureMaxMs: 60_000 });
    expect(f.failures).toEqual({ '503 unavailable': 2, timeout: 1 });
  });

  it('judges a row by its p99 ratio and its non-2xx answers', () => {
    expect(p99Ratio(30, 10)).toBe(3);
    expect(p99Ratio(null, 10)).toBeNull();
    expect(p99Ratio(30, null)).toBeNull();
    expect(fairnessVerdict(1.5, 0, 10)).toBe('met');
    expect(fairnessVerdict(2, 0, 10)).toBe('met');
    expect(fairnessVerdict(2.5, 0, 10)).toBe('NOT MET (x2.5)');
    expect(fairnessVerdict(1.2, 3, 10)).toBe('NOT MET (3 non-2xx)');
    expect(fairnessVerdict(null, 4, 0)).toBe('NOT MET (no 2xx answer, 4 non-2xx)');
  });

  it('prints the spread of the known values', () => {
    const x = (v: number) => `x${v.toFixed(2)}`;
    expect(spread([1.5, null, 3], x)).toBe('x1.50–x3.00');
    expect(spread([2, 2], x)).toBe('x2.00');
    expect(spread([null], x)).toBe('-');
  });

  it('measures each delivery from its prompt, and counts those that never came', () => {
    const prompted = new Map([
      ['a', 100],
      ['b', 200],
      ['c', 300],
    ]);
    const arrivals = new Map([
      ['a', 150],
      ['c', 700],
      ['other', 1],
    ]);
    expect(deliveryFigures(prompted, arrivals)).toEqual({
      expected: 3,
      arrived: 2,
      p50Ms: 50,
      p99Ms: 400,
      maxMs: 400,
    });
  });

  it("reads a bulk import's NDJSON reports", () => {
    const text = [
      '{"line":1,"ok":true,"id":"s1","nodes":25000}',
      '{"line":2,"ok":false,"error":{"code":"unavailable","message":"busy"}}',
      '{"line":3,"ok":true,"id":"s3","nodes":25000}',
      '{"ok":false,"error":{"code":"unavailable","message":"import interrupted"}}',
      '',
    ].join('\n');
    expect(bulkImportOutcome(text)).toEqual({
      okLines: 2,
      nodes: 50_000,
      failed: { unavailable: 1 },
      interrupted: 'unavailable: import interrupted',
    });
  });

  it('shortens an error to its code and the start of its message', () => {
    expect(errorText('unavailable', 'the database is busy')).toBe('unavailable: the database is busy');
    expect(errorText(null, null)).toBe('error');
    expect(errorText('x', 'y'.repeat(200))).toHaveLength(90);
  });

  it('reads its options from the command line or the environment, within bounds', () => {
    expect(fairnessOptions([], {})).toEqual({
      runtimes: ['embedded', 'postgres'],
      runs: 1,
      importNodes: 100_000,
      measureMs: 15_000,
    });
    expect(
      fairnessOptions(['--fairness-runtimes=postgres', '--fairness-import-nodes=1000'], {
        CANOPY_BENCH_FAIRNESS_RUNS: '3',
      }),
    ).toMatchObject({ runtimes: ['postgres'], runs: 3, importNodes: 1_000 });
    expect(() => fairnessOptions(['--fairness-runtimes=redis'], {})).toThrow(/runtimes/);
    expect(() => fairnessOptions(['--fairness-import-nodes=100001'], {})).toThrow(/import-nodes/);
    expect(() => fairnessOptions(['--fairness-runs=0'], {})).toThrow(/runs/);
  });
});
