// What every bench section shares: running cases with tinybench (interleaved rounds, a clean heap per task, GC
// metered), the BenchReport rows they give, and the table printing them: one row per (case, size), then per
// case the ratio of the largest size's mean time to the smallest's, with a verdict on whether the work grows
// linearly with the input, with and without the time V8 spent in GC pauses.

import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { Bench, type BenchOptions, type FnOptions, type Task } from 'tinybench';

export interface BenchReport {
  /** What is measured, e.g. 'push'; rows with the same case are compared by size. */
  case: string;
  /** The input size (N, depth D ...); the ratio compares the largest size with the smallest. */
  size: number;
  /** Mean wall time of one timed call, in milliseconds. */
  meanMs: number;
  /** Median wall time of one timed call, in milliseconds. */
  p50Ms: number;
  /** Relative margin of error of the mean, in percent. */
  rmePct: number;
  /** Timed calls behind the figures. */
  samples: number;
  /** When one timed call does many units of work (N pushes): their count and name, to show time per unit. */
  unit?: { count: number; name: string };
  /** Share of the timed run spent in GC pauses, in percent, when a GcMeter watched it. */
  gcPct?: number;
  /** Rounds the case ran; the figures are those of the round with the lowest mean. */
  rounds?: number;
}

/** One timed function at one size. */
export interface BenchCase<T = unknown> {
  /** Unique among the cases run together (the tinybench task name). */
  name: string;
  /** The report's case: cases sharing it are compared by size. */
  case: string;
  size: number;
  unit?: BenchReport['unit'];
  /**
   * The timed call; fixtures are built before, outside it. Return what it computes (tinybench drops it) rather
   * than storing it in a variable that outlives the call: a module-level `sink` keeping the last result alive
   * took allTurns over 10k nodes from ~5.5 ms to 10-15 ms, a third to a half of it in GC pauses.
   */
  fn: () => T;
  /** Gets the result of one more call after each phase; throws when it is not what the fixture should give. */
  check?(result: T): void;
}

/** How long tinybench runs each task per round: it stops once both the time and the iteration count are met. */
export type BenchBudget = Pick<BenchOptions, 'time' | 'iterations' | 'warmupTime' | 'warmupIterations'>;

export const DEFAULT_ROUNDS = 3;

/**
 * Runs the cases in `rounds` interleaved rounds (every case once per round, in order) and reports, per case,
 * the round with the lowest mean. On a shared machine other processes only ever add time, so the best round
 * is the closest to the code's own cost, and interleaving keeps a burst of load from hitting one size only.
 */
export async function runCases(
  cases: readonly BenchCase[],
  budget: BenchBudget,
  rounds = DEFAULT_ROUNDS,
): Promise<BenchReport[]> {
  const meter = new GcMeter();
  const best = new Map<string, BenchReport>();
  try {
    for (let round = 0; round < rounds; round++) {
      // A fresh Bench per round: a tinybench task runs once.
      const bench = new Bench({ ...budget, throws: true });
      for (const c of cases) bench.add(c.name, c.fn, caseHooks(meter, checkHook(c)));
      await bench.run();
      for (const c of cases) {
        const task = bench.getTask(c.name);
        if (!task) throw new Error(`no bench task "${c.name}"`);
        const report = await taskReport(task, { ...c, meter });
        const previous = best.get(c.name);
        if (!previous || report.meanMs < previous.meanMs) best.set(c.name, report);
      }
    }
  } finally {
    meter.disconnect();
  }
  return cases.map((c) => ({ ...best.get(c.name)!, rounds }));
}

// Measuring

/**
 * Forces a full garbage collection, so each task starts on a clean heap and garbage from the previous one does
 * not land in its figures. `gc` is global only under --expose-gc; setting the flag at run time and reading
 * `gc` from a fresh context gets it without the flag. A no-op if V8 refuses.
 */
export const collectGarbage: () => void = (() => {
  const global = globalThis as { gc?: () => void };
  if (typeof global.gc === 'function') return global.gc;
  try {
    setFlagsFromString('--expose-gc');
    const fn: unknown = runInNewContext('gc');
    if (typeof fn === 'function') return fn as () => void;
  } catch {
    // fall through: no forced collections
  }
  return () => undefined;
})();

/**
 * Records V8's GC pauses (perf_hooks 'gc' entries) and the time window of each task's timed run, so a report
 * can say how much of that run went to GC. Pauses are main-thread stop-the-world time; concurrent marking on
 * helper threads is not counted.
 */
export class GcMeter {
  private readonly pauses: Array<{ start: number; duration: number }> = [];
  private readonly windows = new Map<string, { start: number; end: number }>();
  private readonly observer = new PerformanceObserver((list) => this.record(list.getEntries()));

  constructor() {
    this.observer.observe({ entryTypes: ['gc'] });
  }

  start(key: string): void {
    this.windows.set(key, { start: performance.now(), end: Number.POSITIVE_INFINITY });
  }

  stop(key: string): void {
    const window = this.windows.get(key);
    if (window) window.end = performance.now();
  }

  /** GC share of the key's window in percent; undefined when the key was never started and stopped. */
  async gcPct(key: string): Promise<number | undefined> {
    // Node delivers 'gc' entries from a callback after the collection: let it run before reading them.
    await new Promise((resolve) => setTimeout(resolve, 10));
    this.record(this.observer.takeRecords());
    const window = this.windows.get(key);
    if (!window || !Number.isFinite(window.end) || window.end <= window.start) return undefined;
    let gcMs = 0;
    for (const p of this.pauses) if (p.start >= window.start && p.start < window.end) gcMs += p.duration;
    return Math.min(100, (gcMs / (window.end - window.start)) * 100);
  }

  disconnect(): void {
    this.observer.disconnect();
  }

  private record(entries: readonly PerformanceEntry[]): void {
    for (const e of entries) this.pauses.push({ start: e.startTime, duration: e.duration });
  }
}

/**
 * Hooks for `bench.add`: a clean heap before each phase (warmup and run), the GC meter over the timed run, and
 * an optional check after each phase (throws to fail the bench).
 */
export function caseHooks(meter: GcMeter | undefined, check?: () => void): FnOptions {
  return {
    beforeAll(this: Task, mode) {
      collectGarbage();
      if (mode === 'run') meter?.start(this.name);
    },
    afterAll(this: Task, mode) {
      if (mode === 'run') meter?.stop(this.name);
      check?.();
    },
  };
}

/** The case's check as a hook: one more, untimed call whose result the case checks. */
function checkHook(c: BenchCase): (() => void) | undefined {
  return c.check && (() => c.check?.(c.fn()));
}

/** A completed tinybench task as a report row. Throws if the task errored or never ran. */
export async function taskReport(
  task: Task,
  row: { case: string; size: number; unit?: BenchReport['unit']; meter?: GcMeter },
): Promise<BenchReport> {
  const result = task.result;
  if (result.state === 'errored') throw result.error;
  if (result.state !== 'completed') throw new Error(`bench task "${task.name}" ended ${result.state}`);
  return {
    case: row.case,
    size: row.size,
    meanMs: result.latency.mean,
    p50Ms: result.latency.p50,
    rmePct: result.latency.rme,
    samples: result.latency.samplesCount,
    unit: row.unit,
    gcPct: await row.meter?.gcPct(task.name),
  };
}

// Printing

/** Time in human units: ns, µs, ms or s, three significant digits. */
export function formatTime(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms < 1e-3) return `${sig(ms * 1e6)} ns`;
  if (ms < 1) return `${sig(ms * 1e3)} µs`;
  if (ms < 1e3) return `${sig(ms)} ms`;
  return `${sig(ms / 1e3)} s`;
}

/** Picks the time a ratio compares from a report row; undefined when the row lacks it. */
type TimeOf = (r: BenchReport) => number | undefined;

/**
 * Ratio of the largest size's time to the smallest's, judged against the size ratio: linear work scales by
 * the size ratio, and up to twice that is put down to constant factors (caches, GC); beyond is SUPERLINEAR.
 * `timeOf` picks the time compared (the mean, or the mean without GC pauses); '' when it is unknown.
 */
export function growthVerdict(rows: readonly BenchReport[], timeOf: TimeOf = (r) => r.meanMs): string {
  if (rows.length < 2) return '';
  const sorted = [...rows].sort((a, b) => a.size - b.size);
  const small = sorted[0]!;
  const large = sorted[sorted.length - 1]!;
  const smallMs = timeOf(small);
  const largeMs = timeOf(large);
  if (smallMs === undefined || largeMs === undefined || smallMs <= 0) return '';
  const expected = large.size / small.size;
  const ratio = largeMs / smallMs;
  let verdict = 'linear';
  if (ratio > expected * 2) verdict = 'SUPERLINEAR';
  else if (ratio < expected / 2) verdict = 'sublinear';
  return `x${sig(ratio)} (${verdict})`;
}

/** Mean time without the GC pauses; undefined when GC was not metered. */
function meanWithoutGc(r: BenchReport): number | undefined {
  return r.gcPct === undefined ? undefined : r.meanMs * (1 - r.gcPct / 100);
}

/** Prints the reports as an aligned table under a title. Cases keep their first-seen order. */
export function printReports(title: string, reports: readonly BenchReport[]): void {
  const byCase = new Map<string, BenchReport[]>();
  for (const r of reports) {
    const list = byCase.get(r.case) ?? [];
    list.push(r);
    byCase.set(r.case, list);
  }

  const header = ['case', 'size', 'mean/op', 'p50/op', '±rme', 'ops/s', 'per unit', 'gc', 'ratio', 'ex-GC'];
  const rightAligned = new Set([1, 2, 3, 4, 5, 6, 7]);
  const rows: string[][] = [];
  for (const [caseName, list] of byCase) {
    const sorted = [...list].sort((a, b) => a.size - b.size);
    const ratio = growthVerdict(sorted);
    const ratioExGc = growthVerdict(sorted, meanWithoutGc);
    sorted.forEach((r, i) => {
      const last = i === sorted.length - 1;
      rows.push([
        i === 0 ? caseName : '',
        r.size.toLocaleString('en-US'),
        formatTime(r.meanMs),
        formatTime(r.p50Ms),
        `${r.rmePct.toFixed(1)}%`,
        formatOps(r.meanMs > 0 ? 1000 / r.meanMs : Number.POSITIVE_INFINITY),
        r.unit ? `${formatTime(r.meanMs / r.unit.count)}/${r.unit.name}` : '',
        r.gcPct === undefined ? '' : `${r.gcPct.toFixed(0)}%`,
        last ? ratio : '',
        last ? ratioExGc : '',
      ]);
    });
  }

  printTable(title, header, rows, rightAligned);
  const rounds = Math.max(0, ...reports.map((r) => r.rounds ?? 0));
  if (rounds > 1) console.log(`Figures: the round with the lowest mean, of ${rounds} rounds per case.`);
  console.log('ratio: mean at the largest size / at the smallest; linear work gives about the size ratio.');
  console.log('gc: share of the timed run spent in GC pauses; ex-GC: the ratio of the means without them.');
}

/** Prints rows as an aligned table under an underlined title; columns in `rightAligned` are padded left. */
export function printTable(
  title: string,
  header: readonly string[],
  rows: readonly string[][],
  rightAligned: ReadonlySet<number>,
): void {
  const widths = header.map((h, col) => Math.max(h.length, ...rows.map((row) => row[col]?.length ?? 0)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, col) => (rightAligned.has(col) ? cell.padStart(widths[col]!) : cell.padEnd(widths[col]!)))
      .join('  ')
      .trimEnd();

  console.log(`\n${title}`);
  console.log('='.repeat(title.length));
  console.log(line(header));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const row of rows) console.log(line(row));
}

function formatOps(ops: number): string {
  if (!Number.isFinite(ops)) return String(ops);
  if (ops >= 1e6) return `${sig(ops / 1e6)}M`;
  if (ops >= 1e4) return `${sig(ops / 1e3)}k`;
  return sig(ops);
}

/** Three significant digits without an exponent; whole numbers from 100 up. */
function sig(value: number): string {
  if (value === 0) return '0';
  if (Math.abs(value) >= 100) return Math.round(value).toString();
  return value.toPrecision(3);
}
