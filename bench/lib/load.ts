// The load generators: closed-loop clients in this process over a measured window (the in-process engine, the raw
// Postgres limit), and the HTTP load generator in a process of its own (http-load.mjs: keep-alive virtual users, so
// its CPU is not the service's).

import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { summarise, type LatencySummary } from './percentile';
import { ROOT } from './processes';

/**
 * A measured window that opens after a warm-up: closed-loop clients keep calling while it is open, and each call is
 * counted by its share inside it. Clients that start together with equal latencies complete in waves (100 sessions
 * at ~650 ms: 9 waves in 6 s), so counting completions inside the window would move in steps of a whole wave (~11%);
 * counting each call by its share does not. Latencies are those of the calls wholly inside. This process's CPU is
 * read by timers at the window's edges.
 */
export class MeasuredWindow {
  readonly start: number;
  readonly end: number;
  private readonly latencies: number[] = [];
  private completed = 0;
  private cpuFrom: { at: number; usage: NodeJS.CpuUsage } | null = null;
  private cpu: number | undefined;

  constructor(
    warmupMs: number,
    private readonly measureMs: number,
  ) {
    this.start = performance.now() + warmupMs;
    this.end = this.start + measureMs;
    setTimeout(() => (this.cpuFrom = { at: performance.now(), usage: process.cpuUsage() }), warmupMs).unref();
    setTimeout(() => this.cpuPct(), warmupMs + measureMs).unref();
  }

  /** Whether a client should start another call. */
  get open(): boolean {
    return performance.now() < this.end;
  }

  /** Runs one call and counts it; a call that resolves with a time (performance.now()) ended then. */
  async time(call: () => Promise<unknown>): Promise<void> {
    const started = performance.now();
    const result = await call();
    const ended = typeof result === 'number' ? result : performance.now();
    this.record(started, ended);
  }

  record(started: number, ended: number): void {
    this.completed += windowShare(this.start, this.end, started, ended);
    if (started >= this.start && ended < this.end) this.latencies.push(ended - started);
  }

  /** Calls per second of the window, and the latencies of those wholly inside it. */
  figures(): { perSec: number; latency: LatencySummary; cpuPct: number } {
    return {
      perSec: this.completed / (this.measureMs / 1000),
      latency: summarise(this.latencies),
      cpuPct: this.cpuPct(),
    };
  }

  /** This process's CPU over the window in % of one core; reading it closes the window's CPU then. */
  private cpuPct(): number {
    if (this.cpu === undefined && this.cpuFrom) {
      const { user, system } = process.cpuUsage(this.cpuFrom.usage);
      this.cpu = ((user + system) / 1000 / (performance.now() - this.cpuFrom.at)) * 100;
    }
    return this.cpu ?? Number.NaN;
  }
}

/** The share of a call (from `started` to `ended`) inside the window from `start` to `end`. */
export function windowShare(start: number, end: number, started: number, ended: number): number {
  return ended > started
    ? Math.max(0, Math.min(ended, end) - Math.max(started, start)) / (ended - started)
    : 0;
}

/** What the HTTP load generator is told to do (see http-load.mjs). */
export interface HttpLoadJob {
  url: string;
  key: string;
  mode: 'wait' | 'stream' | 'branch' | 'create';
  concurrency: number;
  warmupMs: number;
  measureMs: number;
  turns: number;
  closeSessions?: boolean;
}

export interface HttpLoadResult {
  perSec: number;
  p50Ms: number | null;
  p99Ms: number | null;
  samples: number;
  createP50Ms: number | null;
  createP99Ms: number | null;
  totalTurns: number;
  totalSessions: number;
  errors: Record<string, number>;
  /** The load generator's CPU, in % of one core. */
  cpuPct: number;
  wallMs: number;
}

/** Runs the HTTP load generator in a process of its own and answers its figures. */
export function runHttpLoad(job: HttpLoadJob): Promise<HttpLoadResult> {
  return new Promise((resolveLoad, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [join(__dirname, 'http-load.mjs'), JSON.stringify(job)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`load generator exited with ${code}: ${err}`));
      try {
        resolveLoad({ ...(JSON.parse(out) as HttpLoadResult), wallMs: performance.now() - started });
      } catch (e) {
        reject(new Error(`load generator output: ${out} ${err} (${String(e)})`));
      }
    });
  });
}
