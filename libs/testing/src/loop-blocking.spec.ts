import { blockingFigures, mainThreadCpuMs, measureLoopBlocking } from './loop-blocking';

describe('mainThreadCpuMs', () => {
  it('reads utime and stime after the command name, whatever it holds', () => {
    // pid (comm) state ppid ... utime(14) stime(15) ...
    const stat = '4242 (node (a) b) R 1 2 3 4 5 6 7 8 9 10 250 31 0 0 20 0 11 0 100 0 0';
    expect(mainThreadCpuMs(stat)).toBe(2_810);
  });

  it('grows as the main thread computes', () => {
    const before = mainThreadCpuMs();
    // 200 ms of computing by the wall clock: even a thread that waits for a core for part of it runs for ticks.
    const until = performance.now() + 200;
    let x = 0;
    while (performance.now() < until) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    expect(mainThreadCpuMs()).toBeGreaterThan(before);
  });
});

describe('blockingFigures', () => {
  it('answers the 99th percentile, the maximum and the count', () => {
    const series = Array.from({ length: 200 }, (_, i) => (i < 197 ? 1 : 100 + i));
    expect(blockingFigures(series)).toEqual({ p99Ms: 297, maxMs: 299, samples: 200 });
    expect(blockingFigures([])).toEqual({ p99Ms: 0, maxMs: 0, samples: 0 });
  });
});

describe('measureLoopBlocking', () => {
  it('counts a synchronous stretch of the main thread as blocked', async () => {
    const meter = measureLoopBlocking();
    await new Promise((r) => setTimeout(r, 30));
    // 150 ms of the main thread's own CPU, without yielding.
    const start = mainThreadCpuMs();
    while (mainThreadCpuMs() - start < 150);
    await new Promise((r) => setTimeout(r, 30));
    const figures = meter.stop();
    expect(figures.maxMs).toBeGreaterThanOrEqual(120);
  });
});
