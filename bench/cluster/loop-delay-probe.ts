// The event-loop delay probe of the cluster bench's processes (loop-delay.cjs, preloaded into each): the directory
// the processes write their figures and profiles to, and the bench's side of it (reset, read, summarise).

import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { summariseCpuProfile, summariseHeapProfile, type AllocationSummary } from '../lib/cpu-profile';
import type { ClusterBenchResult, ClusterGc, ClusterLevel } from './scenario';
import type { Deployment } from './scale';

/** The event-loop delay probe's directory: processes write their figures there, the bench resets and reads them. */
export class LoopDelayProbe {
  private constructor(
    readonly dir: string,
    private readonly profile: boolean,
  ) {}

  static create(profile: boolean): LoopDelayProbe {
    return new LoopDelayProbe(mkdtempSync(join(tmpdir(), 'canopy-loop-delay-')), profile);
  }

  /** What a process needs in its environment to carry the probe. */
  get env(): Record<string, string> {
    return {
      NODE_OPTIONS: `--require ${join(__dirname, 'loop-delay.cjs')}`,
      CANOPY_BENCH_PROBE_DIR: this.dir,
      ...(this.profile ? { CANOPY_BENCH_CPU_PROFILE: '1' } : {}),
    };
  }

  /** The CPU profiles the stopped processes wrote (from the last reset to their exit), summarised. */
  profiles(deployment: 'canopy' | 'baseline', pids: Map<string, number>): ClusterBenchResult['profiles'] {
    const found: ClusterBenchResult['profiles'] = [];
    for (const [name, pid] of pids) {
      try {
        let allocations: AllocationSummary | null = null;
        try {
          allocations = summariseHeapProfile(join(this.dir, `${pid}.heapprofile`));
        } catch {
          // no allocation profile
        }
        found.push({
          deployment,
          process: name,
          summary: summariseCpuProfile(join(this.dir, `${pid}.cpuprofile`), 0, 12),
          allocations,
        });
        this.keep(`${pid}.cpuprofile`, `${deployment}-${name}.cpuprofile`);
        this.keep(`${pid}.heapprofile`, `${deployment}-${name}.heapprofile`);
      } catch {
        // no profile: the process died without its exit handler
      }
    }
    return found;
  }

  /**
   * Copies a profile to CANOPY_BENCH_PROFILE_DIR when set (for Chrome DevTools or speedscope), under the process's
   * name.
   */
  private keep(file: string, as: string): void {
    const into = process.env.CANOPY_BENCH_PROFILE_DIR;
    if (!into) return;
    try {
      mkdirSync(into, { recursive: true });
      copyFileSync(join(this.dir, file), join(into, as));
    } catch {
      // not written (no allocation profile)
    }
  }

  /** Starts a new histogram in every process (within the probe's half-second tick). */
  reset(): void {
    writeFileSync(join(this.dir, 'reset'), String(Date.now()));
  }

  /** Each process's figures since the last reset. */
  read(deployment: Deployment): ClusterLevel['loopDelay'] {
    const result: ClusterLevel['loopDelay'] = {};
    for (const [name, { proc }] of deployment.processes) {
      try {
        const figures = JSON.parse(readFileSync(join(this.dir, `${proc.pid}.json`), 'utf8')) as {
          p99: number;
          max: number;
          gc?: ClusterGc;
        };
        result[name] = { p99: figures.p99, max: figures.max, gc: figures.gc ?? null };
      } catch {
        // the process wrote nothing (it died, or the probe is off)
      }
    }
    return result;
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
