// What every bench section prints with: times in human units, aligned tables, and the verdicts on the targets.
// A target is judged on a ratio measured in the same run or on a count, never on an absolute time (a shared machine's
// speed moves from day to day; a ratio of two figures taken side by side does not), and each verdict carries the
// spread behind its figure (min–max over runs, or the p50/p99 it was taken from). `npm run bench` prints every
// section's verdicts at the end in one table.

/** One target of one section, judged. */
export interface Verdict {
  section: string;
  /** What is required, e.g. 'p99 <= 2x the relay's at 1,000 sessions'. */
  target: string;
  /** The figure judged, formatted. */
  measured: string;
  /** What the figure moved over: min–max over runs, or the p50/p99 it comes from. */
  spread: string;
  /** null: not judged (the reason is in `measured`). */
  pass: boolean | null;
}

/**
 * A figure judged against a limit: `max` passes at or under it, `min` at or over it. A figure that is not a finite
 * number is not judged.
 */
export function judge(
  section: string,
  target: string,
  figure: {
    value: number;
    limit: number;
    kind: 'max' | 'min';
    format: (v: number) => string;
    spread: string;
  },
): Verdict {
  const { value, limit, kind, format, spread } = figure;
  if (!Number.isFinite(value)) return { section, target, measured: 'not measured', spread, pass: null };
  const pass = kind === 'max' ? value <= limit : value >= limit;
  return { section, target, measured: format(value), spread, pass };
}

/** A verdict that could not be taken, with the reason in place of the figure. */
export function notJudged(section: string, target: string, reason: string): Verdict {
  return { section, target, measured: reason, spread: '-', pass: null };
}

export function verdictWord(pass: boolean | null): string {
  return pass === null ? 'not judged' : pass ? 'pass' : 'FAIL';
}

/** The verdicts as table rows: section (once per run of rows), target, measured, spread, verdict. */
export function verdictRows(verdicts: readonly Verdict[]): string[][] {
  return verdicts.map((v, i) => [
    i > 0 && verdicts[i - 1]!.section === v.section ? '' : v.section,
    v.target,
    v.measured,
    v.spread,
    verdictWord(v.pass),
  ]);
}

/** Prints the verdicts as one table under a title, and a count of each outcome. */
export function printVerdicts(title: string, verdicts: readonly Verdict[]): void {
  printTable(title, ['section', 'target', 'measured', 'spread', 'verdict'], verdictRows(verdicts), new Set());
  const count = (pass: boolean | null) => verdicts.filter((v) => v.pass === pass).length;
  console.log(`${count(true)} pass, ${count(false)} fail, ${count(null)} not judged.`);
}

/** `x1.23`: a ratio. */
export const ratio = (v: number): string => `${v.toFixed(2)}x`;

/** `85%`: a share. */
export const percent = (v: number): string => `${(v * 100).toFixed(0)}%`;

/** Time in human units: ns, µs, ms or s, three significant digits. */
export function formatTime(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms < 1e-3) return `${sig(ms * 1e6)} ns`;
  if (ms < 1) return `${sig(ms * 1e3)} µs`;
  if (ms < 1e3) return `${sig(ms)} ms`;
  return `${sig(ms / 1e3)} s`;
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

/** Three significant digits without an exponent; whole numbers from 100 up. */
function sig(value: number): string {
  if (value === 0) return '0';
  if (Math.abs(value) >= 100) return Math.round(value).toString();
  return value.toPrecision(3);
}
