// The cluster bench's scenario and what it measures of a scale: the layout (APIS apis and WORKERS workers), each
// session's scripted reply of DELTAS deltas DELTA_MS apart, its subscribers, and the figures of one scale.

import type { AllocationSummary, ProfileSummary } from '../lib/cpu-profile';

export const DELTAS = 200;
export const DELTA_MS = 50;
/**
 * Sessions per WebSocket connection: the deployment's default WS_MAX_SUBSCRIPTIONS. Every session is subscribed once
 * on each api, over ceil(sessions / this) connections per api (a client multiplexing 500 sessions on one connection
 * held a fifth of the buffer per session, and a stall of the bench's own loop of ~0.4 s got it cut).
 */
export const SESSIONS_PER_SOCKET = 100;
export const APIS = 2;
export const WORKERS = 2;
/** Requests (session creation, prompts) and subscribes in flight at once. */
export const REQUESTS_IN_FLIGHT = 50;

/** The scripted reply: DELTAS words, one delta each (mock:script streams a text word by word). */
export const REPLY = Array.from({ length: DELTAS }, (_, i) => `word${i}`).join(' ');

export interface ClusterLevel {
  sessions: number;
  /** Runs whose end (the commit's `store` event) reached both subscribers. */
  runsCompleted: number;
  /** Most runs streaming at once (from a run's first event to its end, as api-1's subscriber saw them). */
  peakStreaming: number;
  /** From the first prompt sent to the last run's end on both subscribers. */
  wallMs: number;
  /** text_delta events received, both subscribers counted. */
  deltaEvents: number;
  /** Events of every type published during the phase (received by one subscriber per session). */
  publishedEvents: number;
  /** The scripted deltas those events carry (a coalesced event carries several). */
  originalDeltas: number;
  /** Emit (the event's `at`) -> receipt, over every text_delta received. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** p99 over the deltas received once every prompt had been answered (all runs streaming, no ramp). */
  steadyP99Ms: number;
  /** Average size of a text_delta WebSocket frame, in bytes. */
  deltaFrameBytes: number;
  /** Redis commands processed during the streaming phase (every client of the machine's Redis). */
  redisCommands: number;
  /**
   * The event bus's own commands over the phase (INFO commandstats): XADD, PUBLISH / SPUBLISH and the stream's
   * EXPIRE, less the same commands of others (otherPublishes, queueEventAppends). Everything else Redis ran (the live registry, timers, BullMQ, rate limits) is work per run or per
   * second, not per event.
   */
  busCommands: number;
  /**
   * PUBLISHes over the phase on channels other than the event bus's (the activity feed, run control), counted by a
   * pattern subscriber: taken out of busCommands (INFO cannot tell the PUBLISHes apart), left in redisCommands.
   */
  otherPublishes: number;
  /** XADDs of BullMQ's scripts to its queues' event streams over the phase: taken out of busCommands too. */
  queueEventAppends: number;
  /** The commands called most over the phase (INFO commandstats), most first. */
  topCommands: Array<{ name: string; calls: number }>;
  /** How long sending every prompt took (the runs start over this time). */
  promptMs: number;
  /** Session-subscriber pairs with a gap, a step back, a wrong text, or seqs differing between the apis. */
  violations: number;
  /**
   * The bench's own WebSocket connections an api cut as slow consumers (more than its buffer limit waited for the
   * bench to read): the bench, not the deployment, fell behind, and the runs on them never complete. A level with
   * any is not judged.
   */
  benchSocketsCut: number;
  /** A few examples of the violations, for the report. */
  violationExamples: string[];
  /** CPU time over the streaming phase, in % of one core, by process (api-1, worker-2, redis, bench ...). */
  cpuPct: Record<string, number>;
  /** The whole machine's busy CPU over the phase, in % of all its cores (/proc/stat); NaN where unknown. */
  machineCpuPct: number;
  /** CPU seconds of the deployment (apis, workers, Redis, Postgres) per text_delta event delivered. */
  cpuMsPerEvent: number;
  /**
   * Event-loop delay over the streaming phase, by process: p99 and max in ms, and the garbage collector's pauses
   * (total, longest, how many of 5 ms or more).
   */
  loopDelay: Record<
    string,
    {
      p99: number;
      max: number;
      gc: ClusterGc | null;
    }
  >;
}

/** A process's garbage-collection pauses over a phase (ms). */
export interface ClusterGc {
  totalMs: number;
  maxMs: number;
  over5ms: number;
  count: number;
  /** By kind (minor = scavenge, major = mark-compact, incremental marking steps, weak callbacks). */
  kinds?: Record<string, { count: number; totalMs: number; maxMs: number }>;
}

export interface ClusterBenchResult {
  levels: ClusterLevel[];
  /** The baseline relay at the same scales. */
  baseline: ClusterLevel[];
  /** Raw PUBLISH messages received per second by one subscriber. */
  rawPublishPerSec: number;
  rawPayloadBytes: number;
  coalesceMs: number;
  /** Sessions of the unmeasured pass each deployment played before its scales (0: none). */
  warmupSessions: number;
  /** CPU profiles over the last scale's streaming phase, by deployment and process (--cluster-profile). */
  profiles: Array<{
    deployment: 'canopy' | 'baseline';
    process: string;
    summary: ProfileSummary;
    /** What the process allocated over the phase, by function (sampling heap profiler). */
    allocations: AllocationSummary | null;
  }>;
}
