// Command-line options of the bench sections, shared so each reads them the same way.

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
  return arg?.slice(flag.length) ?? env[`CANOPY_BENCH_${section.toUpperCase()}_${name.toUpperCase()}`];
}
