// Whether a process id on this machine belongs to a running process (lock files and leftovers name their owner).

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Extra time past the run grace period for closing connections and servers before a stop is forced. */
export const SHUTDOWN_CLOSE_MS = 15_000;

/**
 * A stop that never finishes is worse than a forced one: on SIGTERM/SIGINT, if the process is still alive after
 * the grace period plus the close allowance (a dependency that no longer answers, a handle that never closes),
 * it says so and exits with status 1. Runs it had not finished are taken over (workers) or ended at the next
 * start (embedded), as after a crash. The timer is unref'd: a clean stop never waits for it.
 */
export function armShutdownDeadline(graceMs: number, log: (message: string) => void): void {
  let armed = false;
  const arm = (signal: string) => {
    if (armed) return;
    armed = true;
    const limit = graceMs + SHUTDOWN_CLOSE_MS;
    setTimeout(() => {
      log(`still running ${limit} ms after ${signal}: exiting`);
      process.exit(1);
    }, limit).unref();
  };
  process.once('SIGTERM', () => arm('SIGTERM'));
  process.once('SIGINT', () => arm('SIGINT'));
}

/**
 * A promise nobody awaited that failed because Redis or the database did not answer (a command timeout during
 * an outage) is logged, not fatal: the process keeps serving once the dependency is back. Anything else still
 * ends the process, as Node does by default.
 */
export function tolerateDependencyRejections(
  isDependencyFailure: (reason: unknown) => boolean,
  log: (message: string, reason: unknown) => void,
): void {
  process.on('unhandledRejection', (reason) => {
    if (isDependencyFailure(reason)) {
      log('a dependency did not answer (unawaited command)', reason);
      return;
    }
    throw reason;
  });
}

/**
 * What a failed start prints: a refusal to start that says what to do about it (an Error named 'StartupRefusal',
 * such as the migrator's MigrationHistoryRefusal) by its message alone, anything else with its stack.
 */
export function startFailureText(err: unknown): string {
  if (err instanceof Error && err.name === 'StartupRefusal') return err.message;
  return `failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
}
