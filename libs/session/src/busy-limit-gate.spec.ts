import { BusyLimitGate } from './busy-limit-gate';

describe('BusyLimitGate', () => {
  let now: number;
  const clock = () => now;

  beforeEach(() => {
    now = 1_000_000;
  });

  it('counts the first start of a tenant, then skips while last count + own starts stay under half the limit', () => {
    const gate = new BusyLimitGate(10, clock, 1_000);
    expect(gate.mustCount('t')).toBe(true);
    gate.record('t', 2, true); // 2 others busy + the claimed one: 3
    expect(gate.mustCount('t')).toBe(false);
    gate.record('t', undefined, true); // 4
    expect(gate.mustCount('t')).toBe(false);
    gate.record('t', undefined, true); // 5: half of 10
    expect(gate.mustCount('t')).toBe(true);
  });

  it('counts again once the last count is maxAgeMs old', () => {
    const gate = new BusyLimitGate(100, clock, 1_000);
    gate.record('t', 0, true);
    now += 999;
    expect(gate.mustCount('t')).toBe(false);
    now += 1;
    expect(gate.mustCount('t')).toBe(true);
  });

  it('always counts with a limit of 1 or 2, and for every tenant on its own', () => {
    for (const limit of [1, 2]) {
      const gate = new BusyLimitGate(limit, clock, 1_000);
      gate.record('t', 0, true);
      expect(gate.mustCount('t')).toBe(true);
    }
    const gate = new BusyLimitGate(100, clock, 1_000);
    gate.record('a', 0, true);
    expect(gate.mustCount('a')).toBe(false);
    expect(gate.mustCount('b')).toBe(true);
  });

  it('does not add a refused start, and a start that skipped the count does not make a tenant known', () => {
    const gate = new BusyLimitGate(10, clock, 1_000);
    gate.record('t', 4, false); // counted 4, refused (busy): 4 busy, under 5
    expect(gate.mustCount('t')).toBe(false);
    gate.record('t', undefined, false);
    expect(gate.mustCount('t')).toBe(false);
    gate.record('u', undefined, true);
    expect(gate.size).toBe(1);
    expect(gate.mustCount('u')).toBe(true);
  });

  it('counts from half the limit on, and after a refusal at the limit', () => {
    const gate = new BusyLimitGate(10, clock, 1_000);
    gate.record('t', 4, true); // 5
    expect(gate.mustCount('t')).toBe(true);
    gate.record('t', 10, false); // rate_limited
    expect(gate.mustCount('t')).toBe(true);
  });

  it('forgets stale tenants past 10,000 remembered, the oldest first', () => {
    const gate = new BusyLimitGate(100, clock, 1_000);
    for (let i = 0; i < 10_000; i++) gate.record(`old-${i}`, 0, true);
    now += 1_000;
    gate.record('new', 0, true);
    expect(gate.size).toBe(1);
    for (let i = 0; i < 10_000; i++) gate.record(`young-${i}`, 0, true);
    expect(gate.size).toBe(10_000); // none stale: the oldest goes
    expect(gate.mustCount('new')).toBe(true);
    expect(gate.mustCount('young-9999')).toBe(false);
  });
});
