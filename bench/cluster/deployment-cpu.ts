// The CPU of a deployment over a phase, by process: its own processes (/proc), Redis (INFO cpu), every Postgres
// process (backends opened and closed during the phase included), this bench process, and the rest of the machine.
// Counting only the Postgres backends that lived through the phase had put the others' CPU under `other` (one run at
// 1,000 sessions: postgres 6% and other 36% of a core; counted since, 31-37% and 4-5%).

import { cpus } from 'node:os';

import type { Redis } from 'ioredis';

import {
  cpuPercent,
  machineBusyPercent,
  machineTicks,
  NamedProcessesCpu,
  processTicks,
  ticksToMs,
  type MachineTicks,
} from '../lib/cpu';
import { redisCpuSeconds } from './redis-counters';
import type { Deployment } from './scale';

/** CPU time of the deployment's processes (Linux /proc), Redis (INFO cpu) and this process over a phase. */
export class DeploymentCpu {
  private constructor(
    private readonly stats: Redis,
    private readonly pids: Map<string, number>,
    private readonly ticksFrom: Map<string, number>,
    private readonly redisFrom: number,
    private readonly benchFrom: NodeJS.CpuUsage,
    private readonly machineFrom: MachineTicks | null,
    private readonly postgres: NamedProcessesCpu,
    private readonly startedAt: number,
  ) {}

  static async start(deployment: Deployment, stats: Redis): Promise<DeploymentCpu> {
    const pids = new Map<string, number>();
    const ticks = new Map<string, number>();
    for (const [name, p] of deployment.processes) {
      const from = p.proc.pid === undefined ? null : processTicks(p.proc.pid);
      if (from === null) continue;
      pids.set(name, p.proc.pid!);
      ticks.set(name, from);
    }
    const redisFrom = await redisCpuSeconds(stats);
    return new DeploymentCpu(
      stats,
      pids,
      ticks,
      redisFrom,
      process.cpuUsage(),
      machineTicks(),
      new NamedProcessesCpu('postgres'),
      performance.now(),
    );
  }

  /** CPU over the phase: by process name, then `redis` and `bench`, in % of one core; the machine's busy share. */
  async stop(): Promise<{ byProcess: Record<string, number>; machine: number; elapsedMs: number }> {
    const redisTo = await redisCpuSeconds(this.stats);
    const machine = machineBusyPercent(this.machineFrom, machineTicks());
    const elapsedMs = performance.now() - this.startedAt;
    const pct = (ms: number) => cpuPercent(ms, elapsedMs);
    const result: Record<string, number> = {};
    for (const [name, pid] of this.pids) {
      const to = processTicks(pid);
      if (to !== null) result[name] = pct(ticksToMs(to - this.ticksFrom.get(name)!));
    }
    result.redis = pct((redisTo - this.redisFrom) * 1000);
    const { user, system } = process.cpuUsage(this.benchFrom);
    result.bench = pct((user + system) / 1000);
    const postgres = this.postgres.stop();
    if (postgres !== null) result.postgres = pct(postgres);
    // Everything else busy on the machine (other programs, the kernel), in the same unit.
    const measured = Object.values(result).reduce((a, b) => a + b, 0);
    if (Number.isFinite(machine)) result.other = Math.max(0, machine * cpus().length - measured);
    return { byProcess: result, machine, elapsedMs };
  }
}
