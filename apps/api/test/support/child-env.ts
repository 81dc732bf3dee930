// The environment of a child process a test starts (the built api, bash, an example program): only what it needs
// to run — the PATH, a HOME — plus the variables the test gives it, so nothing of the test run leaks into it.

export function childEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...extra };
}
