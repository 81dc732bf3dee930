// Preloaded (NODE_OPTIONS=--require) into every process of a cluster bench run: the event loop's delay,
// measured with perf_hooks.monitorEventLoopDelay and written to CANOPY_BENCH_PROBE_DIR/<pid>.json twice a second.
// The bench resets it by touching CANOPY_BENCH_PROBE_DIR/reset (a newer mtime starts a new histogram), so a
// phase's figures are its own. Garbage-collection pauses are counted alongside (a PerformanceObserver of 'gc'
// entries: total, longest, how many of 5 ms or more, by kind), so a delay can be told from a GC pause. With
// CANOPY_BENCH_CPU_PROFILE=1 it also profiles the process's CPU and allocations from each reset to its end
// (node:inspector, in process: --cpu-prof is not allowed in NODE_OPTIONS) and writes <pid>.cpuprofile and
// <pid>.heapprofile there.
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS preload: require is how it loads */
const { PerformanceObserver, constants, monitorEventLoopDelay } = require('node:perf_hooks');
const { statSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { setInterval } = require('node:timers');

const dir = process.env.CANOPY_BENCH_PROBE_DIR;
if (dir) {
  let histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  let resetAt = 0;
  const KINDS = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  const fresh = () => ({ totalMs: 0, maxMs: 0, over5ms: 0, count: 0, kinds: {} });
  let gc = fresh();
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gc.count++;
      gc.totalMs += entry.duration;
      gc.maxMs = Math.max(gc.maxMs, entry.duration);
      if (entry.duration >= 5) gc.over5ms++;
      const kind = KINDS[entry.detail?.kind] ?? 'other';
      const k = (gc.kinds[kind] ??= { count: 0, totalMs: 0, maxMs: 0 });
      k.count++;
      k.totalMs += entry.duration;
      k.maxMs = Math.max(k.maxMs, entry.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  const profiler = process.env.CANOPY_BENCH_CPU_PROFILE === '1' ? startProfiler() : null;
  setInterval(() => {
    let mtime = 0;
    try {
      mtime = statSync(join(dir, 'reset')).mtimeMs;
    } catch {
      // no reset marker yet
    }
    if (mtime > resetAt) {
      resetAt = mtime;
      histogram.disable();
      histogram = monitorEventLoopDelay({ resolution: 5 });
      histogram.enable();
      gc = fresh();
      profiler?.restart();
      return;
    }
    const ms = (ns) => ns / 1e6;
    writeFileSync(
      join(dir, `${process.pid}.json`),
      JSON.stringify({
        p50: ms(histogram.percentile(50)),
        p99: ms(histogram.percentile(99)),
        max: ms(histogram.max),
        count: histogram.count,
        gc,
      }),
    );
  }, 500).unref();
}

/** A CPU profiler of this process (the inspector's, in process); restart() starts over, the exit writes it. */
function startProfiler() {
  const inspector = require('node:inspector');
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  // Allocations too (sampled every 32 KiB): what the garbage collector has to deal with.
  session.post('HeapProfiler.enable');
  session.post('HeapProfiler.startSampling', {
    samplingInterval: 32768,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  // A same-thread inspector session answers synchronously, so this works in an exit handler.
  let written = false;
  const write = () => {
    if (written) return;
    written = true;
    session.post('Profiler.stop', (err, result) => {
      if (!err) writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
    session.post('HeapProfiler.stopSampling', (err, result) => {
      if (!err) writeFileSync(join(dir, `${process.pid}.heapprofile`), JSON.stringify(result.profile));
    });
  };
  process.on('exit', write);
  // Nest's shutdown hooks end a process by raising SIGTERM again once they are done, which skips 'exit': the
  // profile is written at the first SIGTERM (the end of the load), and the process ends as the signal would have
  // ended it once no other listener is left (this one being there keeps the signal from ending it by default).
  process.on('SIGTERM', () => {
    write();
    if (process.listenerCount('SIGTERM') === 1) process.exit(143);
  });
  return {
    restart() {
      session.post('Profiler.stop', () => session.post('Profiler.start'));
      session.post('HeapProfiler.stopSampling', () =>
        session.post('HeapProfiler.startSampling', {
          samplingInterval: 32768,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        }),
      );
    },
  };
}
