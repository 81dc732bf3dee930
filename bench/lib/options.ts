// Command-line options of the bench sections, shared so each reads them the same way: `--<section>-<name>=value`,
// else the environment's CANOPY_BENCH_<SECTION>_<NAME>, else the section's default. A run with no section named
// (`npm run bench`) takes each section's quick defaults; a named section its full ones, and options override both.

/**
 * A bench section's option: `--<section>-<name>=value` on the command line, else the environment's
 * CANOPY_BENCH_<SECTION>_<NAME> (upper-cased); undefined when neither is set.
 */
export function benchOption(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  section: string,
  name: string,
): string | undefined {
  const flag = `--${section}-${name}=`;
  const arg = argv.find((a) => a.startsWith(flag));
  return (
    arg?.slice(flag.length) ??
    env[`CANOPY_BENCH_${section.toUpperCase()}_${name.toUpperCase().replace(/-/g, '_')}`]
  );
}

/** Where a section reads its options: the command line, the environment, and whether the run is the quick one. */
export interface OptionSource {
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  /** `npm run bench` with no section named: smaller scales and shorter windows, the same targets. */
  quick: boolean;
}

/** An integer option within bounds; `fallback` when unset or empty. */
export function intOption(
  from: OptionSource,
  section: string,
  name: string,
  fallback: number,
  [min, max]: [number, number],
): number {
  const text = benchOption(from.argv, from.env, section, name)?.trim();
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`--${section}-${name}: an integer from ${min} to ${max}, got "${text}"`);
  }
  return value;
}

/** A comma-separated list of integers within bounds; `fallback` when unset or empty. */
export function intListOption(
  from: OptionSource,
  section: string,
  name: string,
  fallback: readonly number[],
  [min, max]: [number, number],
): number[] {
  const text = benchOption(from.argv, from.env, section, name)?.trim();
  if (text === undefined || text === '') return [...fallback];
  const values = text.split(',').map((s) => Number(s.trim()));
  if (values.some((n) => !Number.isInteger(n) || n < min || n > max)) {
    throw new Error(`--${section}-${name}: integers from ${min} to ${max}, got "${text}"`);
  }
  return values;
}

/** A comma-separated list of names from `allowed`; `fallback` when unset or empty. */
export function choiceListOption<T extends string>(
  from: OptionSource,
  section: string,
  name: string,
  allowed: readonly T[],
  fallback: readonly T[],
): T[] {
  const text = benchOption(from.argv, from.env, section, name)?.trim();
  if (text === undefined || text === '') return [...fallback];
  const items = text.split(',').map((s) => s.trim()) as T[];
  const bad = items.filter((i) => !allowed.includes(i));
  if (bad.length) {
    throw new Error(`--${section}-${name}: unknown ${bad.join(', ')} (known: ${allowed.join(', ')})`);
  }
  return items;
}
