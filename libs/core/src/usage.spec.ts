import { addUsage, emptyUsage, isZeroUsage, makeUsage, sumUsage, USAGE_FIELDS, type Usage } from './usage';

describe('makeUsage', () => {
  it('gives all zeros for no parts', () => {
    expect(makeUsage()).toEqual(emptyUsage());
    expect(isZeroUsage(makeUsage({}))).toBe(true);
  });

  it('fills missing counters with 0 and derives missing totals from their parts', () => {
    expect(
      makeUsage({
        inputTokens: 10,
        outputTokens: 5,
        cacheReadTokens: 3,
        cacheWriteTokens: 2,
        inputCost: 0.5,
        outputCost: 0.25,
      }),
    ).toEqual<Usage>({
      inputTokens: 10,
      outputTokens: 5,
      cacheReadTokens: 3,
      cacheWriteTokens: 2,
      totalTokens: 20,
      inputCost: 0.5,
      outputCost: 0.25,
      cacheReadCost: 0,
      cacheWriteCost: 0,
      totalCost: 0.75,
    });
  });

  it('keeps totals that are given, even when they differ from the sum of the parts', () => {
    const u = makeUsage({ inputTokens: 10, outputTokens: 5, totalTokens: 99, inputCost: 1, totalCost: 7 });
    expect(u.totalTokens).toBe(99);
    expect(u.totalCost).toBe(7);
    const zero = makeUsage({ inputTokens: 10, totalTokens: 0, inputCost: 1, totalCost: 0 });
    expect(zero.totalTokens).toBe(0);
    expect(zero.totalCost).toBe(0);
  });

  it('treats explicitly undefined fields as missing', () => {
    const u = makeUsage({ inputTokens: undefined, outputTokens: 4, totalTokens: undefined });
    expect(u.inputTokens).toBe(0);
    expect(u.totalTokens).toBe(4);
    expect(Object.values(u).every((v) => typeof v === 'number' && !Number.isNaN(v))).toBe(true);
  });

  it('gives exactly the Usage fields', () => {
    expect(Object.keys(makeUsage({ inputTokens: 1 })).sort()).toEqual([...USAGE_FIELDS].sort());
    expect(Object.keys(emptyUsage()).sort()).toEqual([...USAGE_FIELDS].sort());
  });
});

describe('addUsage', () => {
  it('adds field by field without touching its inputs', () => {
    const a = makeUsage({ inputTokens: 1, outputTokens: 2, cacheWriteTokens: 3, outputCost: 0.5 });
    const b = makeUsage({ inputTokens: 10, cacheReadTokens: 20, cacheReadCost: 0.25, totalCost: 1 });
    const aCopy = { ...a };
    const bCopy = { ...b };
    expect(addUsage(a, b)).toEqual<Usage>({
      inputTokens: 11,
      outputTokens: 2,
      cacheReadTokens: 20,
      cacheWriteTokens: 3,
      totalTokens: 36,
      inputCost: 0,
      outputCost: 0.5,
      cacheReadCost: 0.25,
      cacheWriteCost: 0,
      totalCost: 1.5,
    });
    expect(a).toEqual(aCopy);
    expect(b).toEqual(bCopy);
    expect(addUsage(a, emptyUsage())).toEqual(a);
  });
});

describe('sumUsage', () => {
  it('sums any number of usages, counting null and undefined as zero', () => {
    const a = makeUsage({ inputTokens: 1, inputCost: 0.1 });
    const b = makeUsage({ outputTokens: 2, outputCost: 0.2 });
    expect(sumUsage([a, null, b, undefined, a])).toEqual(addUsage(addUsage(a, b), a));
    expect(sumUsage([a, null, b, undefined, a]).totalTokens).toBe(4);
  });

  it('gives zero for nothing or only nulls', () => {
    expect(sumUsage([])).toEqual(emptyUsage());
    expect(sumUsage([null, undefined])).toEqual(emptyUsage());
  });

  it('accepts any iterable', () => {
    function* gen(): Generator<Usage | null> {
      yield makeUsage({ inputTokens: 5 });
      yield null;
      yield makeUsage({ inputTokens: 6 });
    }
    expect(sumUsage(gen()).inputTokens).toBe(11);
  });
});

describe('isZeroUsage', () => {
  it('is true only when every field is zero', () => {
    expect(isZeroUsage(emptyUsage())).toBe(true);
    for (const field of USAGE_FIELDS) expect(isZeroUsage({ ...emptyUsage(), [field]: 1 })).toBe(false);
  });
});
