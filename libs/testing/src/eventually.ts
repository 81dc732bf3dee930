// Asynchronous assertions wait for a condition with a deadline, never for a fixed sleep.

export interface EventuallyOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

/** Retries the assertion until it passes or the deadline passes (then rethrows its last failure). */
export async function eventually<T>(
  assertion: () => T | Promise<T>,
  options: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 5_000);
  const interval = options.intervalMs ?? 25;
  for (;;) {
    try {
      return await assertion();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      await new Promise((r) => setTimeout(r, interval));
    }
  }
}
