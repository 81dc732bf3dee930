// How long this process's event loop was blocked by its own work. The event-loop delay measured by wall time alone
// (monitorEventLoopDelay) also grows with whatever else the machine runs: a process waiting for a core is late
// without having done anything. This meter counts a delay only as far as the main thread ran during it (its CPU
// time, from /proc/self/task/<pid>/stat), so it measures what the process does on its loop and holds beside other
// test files on a busy machine.

import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux everywhere it matters). */
const TICKS_PER_SECOND = 100;

/** The main thread's CPU time so far (user and system), in ms; 10 ms resolution. */
export function mainThreadCpuMs(stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8')): number {
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its closing one.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / TICKS_PER_SECOND;
}

export interface LoopBlocking {
  /** 99th percentile of the blocked time of each tick, in ms. */
  p99Ms: number;
  maxMs: number;
  /** Ticks measured. */
  samples: number;
}

/**
 * Starts measuring: a tick every intervalMs; each tick's lateness counts as blocked only up to the main thread's CPU
 * time since the tick before. `stop()` ends it and answers the figures (the same ones when called again).
 */
export function measureLoopBlocking(intervalMs = 10): { stop(): LoopBlocking } {
  const blocked: number[] = [];
  let lastAt = performance.now();
  let lastCpu = mainThreadCpuMs();
  let figures: LoopBlocking | null = null;
  const timer = setInterval(() => {
    const at = performance.now();
    const cpu = mainThreadCpuMs();
    const late = at - lastAt - intervalMs;
    blocked.push(Math.max(0, Math.min(late, cpu - lastCpu)));
    lastAt = at;
    lastCpu = cpu;
  }, intervalMs);
  return {
    stop(): LoopBlocking {
      clearInterval(timer);
      figures ??= blockingFigures(blocked);
      return figures;
    },
  };
}

/** The figures of a series of blocked times (ms). */
export function blockingFigures(blocked: readonly number[]): LoopBlocking {
  const sorted = [...blocked].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
  return { p99Ms: at(0.99), maxMs: sorted[sorted.length - 1] ?? 0, samples: sorted.length };
}
