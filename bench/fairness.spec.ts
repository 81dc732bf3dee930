// The section's pure helpers. The module it starts processes with is an ES module (the service's start flags) that
// jest cannot require; these tests do not use it.
jest.mock('../scripts/lib/service-process.mjs', () => ({}));

import {
  bulkImportOutcome,
  deliveryFigures,
  errorText,
  fairnessOptions,
  fairnessVerdict,
  fairnessVerdicts,
  kindFigures,
  p99Ratio,
  type FairnessResult,
} from './fairness.bench';

describe('fairness bench figures', () => {
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
    expect(fairnessOptions(full([], {}))).toEqual({
      runtimes: ['embedded', 'postgres'],
      runs: 1,
      importNodes: 100_000,
      measureMs: 15_000,
      pauses: { warmupMs: 5_000, settleMs: 3_000, pileUpMs: 5_000 },
    });
    expect(
      fairnessOptions(
        full(['--fairness-runtimes=postgres', '--fairness-import-nodes=1000'], {
          CANOPY_BENCH_FAIRNESS_RUNS: '3',
        }),
      ),
    ).toMatchObject({ runtimes: ['postgres'], runs: 3, importNodes: 1_000 });
    expect(() => fairnessOptions(full(['--fairness-runtimes=redis'], {}))).toThrow(/runtimes/);
    expect(() => fairnessOptions(full(['--fairness-import-nodes=100001'], {}))).toThrow(/import-nodes/);
    expect(() => fairnessOptions(full(['--fairness-runs=0'], {}))).toThrow(/runs/);
  });

  it('runs the embedded runtime alone, smaller, in the quick run', () => {
    expect(fairnessOptions({ argv: [], env: {}, quick: true })).toEqual({
      runtimes: ['embedded'],
      runs: 1,
      importNodes: 10_000,
      measureMs: 3_000,
      pauses: { warmupMs: 2_000, settleMs: 1_000, pileUpMs: 3_000 },
    });
  });

  it("judges each runtime on the worst ratio of its phases, with their spread, and counts B's failures", () => {
    const kinds = (list: number | null, prompt: number | null, failed = 0) => ({
      list: {
        ok: 10,
        p50Ms: 1,
        p99Ms: list,
        maxMs: list,
        failures: failed ? { '503': failed } : {},
        failureMaxMs: null,
      },
      prompt: { ok: 10, p50Ms: 1, p99Ms: prompt, maxMs: prompt, failures: {}, failureMaxMs: null },
    });
    const deliveries = (p99Ms: number, arrived = 5) => ({
      expected: 5,
      arrived,
      p50Ms: 1,
      p99Ms,
      maxMs: p99Ms,
    });
    const phase = (name: string, k: ReturnType<typeof kinds>, d: ReturnType<typeof deliveries>) => ({
      phase: name,
      windowMs: 1_000,
      kinds: k,
      deliveries: d,
      importOutcome: null,
      webhookLoad: null,
      readyBefore: true,
    });
    const result = {
      options: { runtimes: ['embedded'], runs: 1, importNodes: 100, measureMs: 1_000, pauses: {} },
      importBytes: { canopy: 0, ndjsonLine: 0 },
      runs: [
        {
          run: 1,
          runtime: 'embedded',
          wallMs: 1,
          phases: [
            phase('idle', kinds(10, 20), deliveries(100)),
            phase('webhook answers', kinds(15, 30), deliveries(120)),
            phase('webhook hangs', kinds(25, 20, 2), deliveries(360, 4)),
          ],
        },
      ],
    } as unknown as FairnessResult;
    const [requests, webhooks, failures] = fairnessVerdicts(result);
    expect(requests).toMatchObject({
      measured: '2.50x',
      spread: '1.00x–2.50x over 4 phase-requests, 1 run',
      pass: false,
    });
    expect(webhooks).toMatchObject({
      measured: '3.00x',
      spread: '1.20x–3.00x over 2 phases, 1 run',
      pass: false,
    });
    expect(failures).toMatchObject({ measured: '3', pass: false });
  });
});

/** Options as a named run reads them. */
function full(argv: string[], env: NodeJS.ProcessEnv) {
  return { argv, env, quick: false };
}
