// The few API calls the benches make outside what they measure (tenants, sessions to measure on), and the helpers
// their set-up runs with: many calls with a bound on those in flight, and waiting for a condition.

/** A JSON request with a bearer credential; throws on a non-2xx answer. */
export async function requestJson<T = unknown>(
  apiUrl: string,
  credential: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** A new tenant's API key (an admin call). */
export async function createTenant(apiUrl: string, adminKey: string, name: string): Promise<string> {
  const tenant = await requestJson<{ apiKey: string }>(apiUrl, adminKey, 'POST', '/v1/admin/tenants', {
    name,
  });
  return tenant.apiKey;
}

/** Runs fn(0..count-1) with at most `inFlight` at once; results in index order. */
export async function inBatches<T>(
  count: number,
  inFlight: number,
  fn: (i: number) => Promise<T>,
): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, count) }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await fn(i);
      }
    }),
  );
  return results;
}

/** Resolves once the condition holds; rejects after the deadline. Polls every 20 ms. */
export async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
