// Benchmark results and their printing: one row per (case, size), then per case the ratio of the largest size's
// mean time to the smallest's, with a verdict on whether the work grows linearly with the input.

import type { Task } from 'tinybench';

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
}

/** A completed tinybench task as a report row. Throws if the task errored or never ran. */
export function taskReport(task: Task, caseName: string, size: number, unit?: BenchReport['unit']): BenchReport {
  const result = task.result;
  if (result.state === 'errored') throw result.error;
  if (result.state !== 'completed') throw new Error(`bench task "${task.name}" ended ${result.state}`);
  return {
    case: caseName,
    size,
    meanMs: result.latency.mean,
    p50Ms: result.latency.p50,
    rmePct: result.latency.rme,
    samples: result.latency.samplesCount,
    unit,
  };
}

/** Time in human units: ns, µs, ms or s, three significant digits. */
export function formatTime(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms < 1e-3) return `${sig(ms * 1e6)} ns`;
  if (ms < 1) return `${sig(ms * 1e3)} µs`;
  if (ms < 1e3) return `${sig(ms)} ms`;
  return `${sig(ms / 1e3)} s`;
}

/** Ratio of the largest size's mean to the smallest's, judged against the size ratio. */
export function growthVerdict(rows: readonly BenchReport[]): string {
  if (rows.length < 2) return '';
  const sorted = [...rows].sort((a, b) => a.size - b.size);
  const small = sorted[0]!;
  const large = sorted[sorted.length - 1]!;
  const expected = large.size / small.size;
  const ratio = large.meanMs / small.meanMs;
  // Linear work scales by `expected`; twice that is beyond noise and constant factors (cache misses, GC).
  let verdict = 'linear';
  if (ratio > expected * 2) verdict = 'SUPERLINEAR';
  else if (ratio < expected / 2) verdict = 'sublinear';
  return `x${sig(ratio)} (${verdict})`;
}

/** Prints the reports as an aligned table under a title. Cases keep their first-seen order. */
export function printReports(title: string, reports: readonly BenchReport[]): void {
  const byCase = new Map<string, BenchReport[]>();
  for (const r of reports) {
    const list = byCase.get(r.case) ?? [];
    list.push(r);
    byCase.set(r.case, list);
  }

  const header = ['case', 'size', 'mean/op', 'p50/op', '±rme', 'ops/s', 'per unit', 'samples', 'ratio (large/small)'];
  const rightAligned = new Set([1, 2, 3, 4, 5, 6, 7]);
  const rows: string[][] = [];
  for (const [caseName, list] of byCase) {
    const sorted = [...list].sort((a, b) => a.size - b.size);
    const verdict = growthVerdict(sorted);
    sorted.forEach((r, i) => {
      rows.push([
        i === 0 ? caseName : '',
        r.size.toLocaleString('en-US'),
        formatTime(r.meanMs),
        formatTime(r.p50Ms),
        `${r.rmePct.toFixed(1)}%`,
        formatOps(r.meanMs > 0 ? 1000 / r.meanMs : Infinity),
        r.unit ? `${formatTime(r.meanMs / r.unit.count)}/${r.unit.name}` : '',
        String(r.samples),
        i === sorted.length - 1 ? verdict : '',
      ]);
    });
  }

  const widths = header.map((h, col) => Math.max(h.length, ...rows.map((row) => row[col]!.length)));
  const line = (cells: string[]): string =>
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
