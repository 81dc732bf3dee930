// Preloaded (NODE_OPTIONS=--require) into every process of a cluster bench run: the event loop's delay,
// measured with perf_hooks.monitorEventLoopDelay and written to CANOPY_BENCH_PROBE_DIR/<pid>.json twice a second.
// The bench resets it by touching CANOPY_BENCH_PROBE_DIR/reset (a newer mtime starts a new histogram), so a
// phase's figures are its own.
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS preload: require is how it loads */
const { monitorEventLoopDelay } = require('node:perf_hooks');
const { statSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { setInterval } = require('node:timers');

const dir = process.env.CANOPY_BENCH_PROBE_DIR;
if (dir) {
  let histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  let resetAt = 0;
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
      }),
    );
  }, 500).unref();
}
