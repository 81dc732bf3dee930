// Resident memory of a process from Linux's /proc/<pid>/status, and its peak over a phase, sampled.

import { readProc } from './cpu';

/** VmRSS in MiB from the text of /proc/<pid>/status; null when the line is missing. */
export function parseResidentMiB(status: string): number | null {
  const kib = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
  return kib === undefined ? null : Number(kib) / 1024;
}

/** A process's resident memory in MiB; null once it is gone (or where /proc is not there). */
export function residentMiB(pid: number): number | null {
  return readProc(`/proc/${pid}/status`, parseResidentMiB);
}

/** The highest resident memory of a process while it runs, sampled every 250 ms. */
export class PeakResident {
  private peak: number;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pid: number) {
    this.peak = residentMiB(pid) ?? 0;
    this.timer = setInterval(() => this.sample(), 250);
    this.timer.unref();
  }

  /** The peak in MiB; stops sampling. */
  stop(): number {
    clearInterval(this.timer);
    this.sample();
    return this.peak;
  }

  private sample(): void {
    this.peak = Math.max(this.peak, residentMiB(this.pid) ?? 0);
  }
}
