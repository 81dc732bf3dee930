// The worker's publish path alone, on the machine's Redis: what one delta costs the process that streams it, against
// the least any such process must do (one PUBLISH per delta, as the cluster bench's baseline relay worker). The
// cluster bench judges the whole deployment on a shared 2-core machine, where a change to one process's path drowns
// in the spread of six processes; this measures that path in a process of its own (the worker's node flags), in a
// few seconds, alternating the two variants three times so the ratio is read within each pair.

import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { serviceProcess } from '../scripts/lib/service-process.mjs';
import type { PublishJob, PublishMeasurement } from './publish-path-child';
import { formatTime, printTable } from './report';

const CHILD = join(__dirname, 'publish-path-child.ts');
const SCALES = [300, 1_000];
const PAIRS = 3;
const WARMUP_MS = 2_000;
const MEASURE_MS = 4_000;

export interface PublishLevel {
  sessions: number;
  canopy: PublishMeasurement[];
  bare: PublishMeasurement[];
}

export async function runPublishBench(
  redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
): Promise<PublishLevel[]> {
  const levels: PublishLevel[] = [];
  for (const sessions of SCALES) {
    const level: PublishLevel = { sessions, canopy: [], bare: [] };
    for (let pair = 0; pair < PAIRS; pair++) {
      for (const variant of ['canopy', 'bare'] as const) {
        const prefix = `canopy-bench-publish-${process.pid}-${sessions}-${pair}`;
        level[variant].push(
          await measure({ variant, sessions, warmupMs: WARMUP_MS, measureMs: MEASURE_MS, redisUrl, prefix }),
        );
      }
    }
    levels.push(level);
  }
  return levels;
}

function measure(job: PublishJob): Promise<PublishMeasurement> {
  const { args, env } = serviceProcess({ embedded: false });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...args, '--import', 'tsx', CHILD, JSON.stringify(job)], {
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').pop();
      if (code !== 0 || !line) reject(new Error(`publish bench child (${job.variant}) exited with ${code}`));
      else resolve(JSON.parse(line) as PublishMeasurement);
    });
  });
}

export function printPublishReport(title: string, levels: readonly PublishLevel[]): void {
  const header = [
    'sessions',
    'variant',
    'publishes/s',
    'cpu/publish',
    'cpu',
    'gc ms/s',
    'p50',
    'p99',
    'canopy/bare cpu',
  ];
  const rows: string[][] = [];
  for (const level of levels) {
    const ratios = level.canopy.map((c, i) => c.cpuUsPerPublish / level.bare[i]!.cpuUsPerPublish);
    for (const variant of ['canopy', 'bare'] as const) {
      const runs = level[variant];
      rows.push([
        String(level.sessions),
        variant,
        spread(
          runs.map((r) => r.publishesPerSec),
          (v) => v.toFixed(0),
        ),
        spread(
          runs.map((r) => r.cpuUsPerPublish),
          (v) => `${v.toFixed(1)} µs`,
        ),
        spread(
          runs.map((r) => r.cpuPercent),
          (v) => `${v.toFixed(0)}%`,
        ),
        spread(
          runs.map((r) => r.gcMsPerSec),
          (v) => v.toFixed(0),
        ),
        formatTime(median(runs.map((r) => r.p50Ms))),
        formatTime(median(runs.map((r) => r.p99Ms))),
        variant === 'canopy' ? spread(ratios, (v) => `${v.toFixed(2)}x`) : '',
      ]);
    }
  }
  printTable(title, header, rows, new Set([0, 2, 3, 4, 5, 6, 7, 8]));
  console.log(
    `Each session pushes a text_delta every 50 ms; canopy: DeltaCoalescer -> SessionPublisher -> the Redis event bus ` +
      `(XADD, then PUBLISH; ioredis auto-pipelined with the deployment's command timeout); bare: one PUBLISH per ` +
      `delta on a plain connection (the baseline relay's worker). One process each, started with the worker's node ` +
      `flags; ${WARMUP_MS / 1000} s warm-up, ${MEASURE_MS / 1000} s measured, ${PAIRS} pairs run alternately.`,
  );
  console.log(
    "cpu/publish: the process's CPU time (its V8 helper threads included) over the window per publish answered; " +
      'gc ms/s: garbage-collection pauses; p50/p99: push to answer (median over the runs); ' +
      'canopy/bare cpu: per pair, min-max over the pairs. Redis and the subscribers are not counted here.',
  );
}

/** `min-max` of the runs, or one value when they agree to the format. */
function spread(values: readonly number[], format: (v: number) => string): string {
  const low = format(Math.min(...values));
  const high = format(Math.max(...values));
  return low === high ? low : `${low}-${high}`;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
