// CPU time from Linux's /proc, the one reader every bench section meters processes with: a process's utime + stime
// (/proc/<pid>/stat), the machine's busy and total time (/proc/stat), and every process of a name (Postgres's
// backends come and go). /proc counts in clock ticks of CLK_TCK per second, asked of the system once (getconf;
// 100, Linux's usual value, where it cannot be asked). Elsewhere than Linux the readers answer null.

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times. */
export const CLOCK_TICKS = clockTicks();

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** Clock ticks as milliseconds. */
export function ticksToMs(ticks: number, clockTicks = CLOCK_TICKS): number {
  return (ticks / clockTicks) * 1000;
}

/** CPU milliseconds over a wall time, in % of one core. */
export function cpuPercent(cpuMs: number, wallMs: number): number {
  return wallMs > 0 ? (cpuMs / wallMs) * 100 : Number.NaN;
}

/**
 * utime + stime, in clock ticks, from the text of /proc/<pid>/stat. The command name (field 2, in parentheses)
 * may hold spaces and parentheses, so the fields are counted from its last ')': utime and stime are fields 14 and 15.
 */
export function parseProcessStat(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  if (!Number.isFinite(ticks)) throw new Error(`not a /proc/<pid>/stat line: ${stat.slice(0, 80)}`);
  return ticks;
}

/** A /proc file parsed; null where it cannot be read or parsed (a process gone, a system without /proc). */
export function readProc<T>(path: string, parse: (text: string) => T): T | null {
  try {
    return parse(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
}

/** A process's utime + stime in clock ticks; null once it is gone (or where /proc is not there). */
export function processTicks(pid: number): number | null {
  return readProc(`/proc/${pid}/stat`, parseProcessStat);
}

export interface MachineTicks {
  busy: number;
  total: number;
}

/**
 * The machine's CPU time over all cores since boot, from the text of /proc/stat: its first line's user, nice,
 * system, idle, iowait, irq, softirq and steal; busy is all but idle and iowait.
 */
export function parseMachineStat(text: string): MachineTicks {
  const line = text.split('\n')[0] ?? '';
  if (!line.startsWith('cpu ')) throw new Error(`not a /proc/stat text: ${line.slice(0, 80)}`);
  const values = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = values.reduce((a, b) => a + b, 0);
  return { busy: total - values[3]! - values[4]!, total };
}

export function machineTicks(): MachineTicks | null {
  return readProc('/proc/stat', parseMachineStat);
}

/** The machine's busy share between two readings, in % of all its cores; NaN where unknown. */
export function machineBusyPercent(from: MachineTicks | null, to: MachineTicks | null): number {
  if (!from || !to || to.total <= from.total) return Number.NaN;
  return ((to.busy - from.busy) / (to.total - from.total)) * 100;
}

/** CPU ticks of every process whose command is `name`, by pid (empty where /proc is not there). */
export function ticksOfProcessesNamed(name: string): Map<number, number> {
  const ticks = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return ticks;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    if (readProc(`/proc/${entry}/comm`, (comm) => comm.trim()) !== name) continue;
    const t = processTicks(Number(entry));
    if (t !== null) ticks.set(Number(entry), t);
  }
  return ticks;
}

const SAMPLE_MS = 250;

/**
 * The CPU of every process of a name over a phase, those started and ended during it included: Postgres's pools
 * open connections as the load grows and close idle ones, and a backend's first statements (its caches cold) cost
 * the most. Sampled every SAMPLE_MS: a process that exits between two samples loses at most that much of its CPU.
 */
export class NamedProcessesCpu {
  /** Per pid: ticks when first seen (0 for a process that started during the phase) and when last seen. */
  private readonly seen = new Map<number, { from: number; last: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly name: string) {
    for (const [pid, ticks] of ticksOfProcessesNamed(name)) this.seen.set(pid, { from: ticks, last: ticks });
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
    this.timer.unref();
  }

  /** CPU milliseconds over the phase, or null where /proc shows no such process. */
  stop(): number | null {
    clearInterval(this.timer);
    this.sample();
    if (this.seen.size === 0) return null;
    let ticks = 0;
    for (const { from, last } of this.seen.values()) ticks += last - from;
    return ticksToMs(ticks);
  }

  private sample(): void {
    for (const [pid, ticks] of ticksOfProcessesNamed(this.name)) {
      const known = this.seen.get(pid);
      if (known) known.last = ticks;
      else this.seen.set(pid, { from: 0, last: ticks });
    }
  }
}
