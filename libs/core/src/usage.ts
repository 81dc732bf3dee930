// Token and cost accounting for model calls. Costs are in US dollars; every field is a plain number so usage
// survives JSON round-trips (store, events, SDK) unchanged.

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  totalTokens: number;
  inputCost: number;
  outputCost: number;
  cacheReadCost: number;
  cacheWriteCost: number;
  totalCost: number;
}

export const USAGE_FIELDS = [
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'totalTokens',
  'inputCost',
  'outputCost',
  'cacheReadCost',
  'cacheWriteCost',
  'totalCost',
] as const satisfies readonly (keyof Usage)[];

export function emptyUsage(): Usage {
  return {
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    totalTokens: 0,
    inputCost: 0,
    outputCost: 0,
    cacheReadCost: 0,
    cacheWriteCost: 0,
    totalCost: 0,
  };
}

/**
 * Builds a complete Usage from the parts a provider reports. Missing counters are 0; missing totals are the sum
 * of their parts (providers often omit them).
 */
export function makeUsage(parts: Partial<Usage> = {}): Usage {
  const u = { ...emptyUsage(), ...stripUndefined(parts) };
  if (parts.totalTokens === undefined) {
    u.totalTokens = u.inputTokens + u.outputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  }
  if (parts.totalCost === undefined) {
    u.totalCost = u.inputCost + u.outputCost + u.cacheReadCost + u.cacheWriteCost;
  }
  return u;
}

export function addUsage(a: Usage, b: Usage): Usage {
  const out = emptyUsage();
  for (const k of USAGE_FIELDS) out[k] = a[k] + b[k];
  return out;
}

/** Sums any number of usages; null and undefined entries (nodes without usage) count as zero. */
export function sumUsage(usages: Iterable<Usage | null | undefined>): Usage {
  const out = emptyUsage();
  for (const u of usages) {
    if (!u) continue;
    for (const k of USAGE_FIELDS) out[k] += u[k];
  }
  return out;
}

export function isZeroUsage(u: Usage): boolean {
  return USAGE_FIELDS.every((k) => u[k] === 0);
}

function stripUndefined(parts: Partial<Usage>): Partial<Usage> {
  const out: Partial<Usage> = {};
  for (const k of USAGE_FIELDS) {
    const v = parts[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}
