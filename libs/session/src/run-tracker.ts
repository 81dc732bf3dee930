// Follows runs through a session's events so a caller can wait for one (`wait: true`): the messages it produced
// (with the tree node each takes when committed), its usage, and how it ended — completed (or at its step cap),
// paused (with the tool uses awaited), cancelled (with the partial message it was streaming; interrupted by a newer
// prompt: with what it kept, committed), error.
// Pure: fed by events, no I/O.

import {
  addUsage,
  emptyUsage,
  type RunMessage,
  type RunResultStatus,
  type SessionEvent,
  type Usage,
  type RunError,
} from '@canopy/core';

export type RunEnd = RunResultStatus;

export interface RunResult {
  runId: string;
  status: RunEnd;
  messages: RunMessage[];
  error: RunError | null;
  /** Ids of the tool uses a paused run waits for. */
  awaiting: string[];
  usage: Usage;
  durationMs: number;
}

interface Tracked {
  runId: string;
  startedAt: number;
  messages: RunMessage[];
  /** Index of the first message whose node id is not known yet. */
  unassigned: number;
  /** A commit was announced (`turn`); the next `tree` event carries its node ids. */
  commitPending: { stop: boolean; reason: string } | null;
  awaiting: string[];
  usage: Usage;
  result: RunResult | null;
  waiters: Array<(r: RunResult) => void>;
  finishedAt: number | null;
  /** An event of the run was seen (not only a waiter for it: a queued run has not started). */
  started: boolean;
}

/** Finished runs kept per session at most (older ones are forgotten first). */
const MAX_FINISHED = 100;

export class RunTracker {
  private readonly runs = new Map<string, Tracked>();
  /** Finished runs in the order they finished: pruning looks at the oldest only. */
  private readonly finished: string[] = [];

  constructor(private readonly keepMs: number) {}

  observe(event: SessionEvent): void {
    switch (event.type) {
      case 'status':
        if (event.data.runId && event.data.status === 'busy') {
          this.settleUnseen(event.data.runId, event.at);
          const t = this.track(event.data.runId, event.at);
          t.result = null; // resumed after a pause: it runs again
        }
        break;
      case 'message': {
        const t = this.track(event.data.runId, event.at);
        // A run taken over re-runs from its last commit: the same node ids again replace the dead attempt's.
        const nodeId = event.data.nodeId ?? null;
        const again = nodeId === null ? -1 : t.messages.findIndex((m) => m.nodeId === nodeId);
        if (again >= t.unassigned) t.messages.length = again;
        t.messages.push({ nodeId, message: event.data.message });
        break;
      }
      case 'step': {
        const t = this.track(event.data.runId, event.at);
        t.usage = addUsage(t.usage, event.data.usage);
        break;
      }
      case 'turn': {
        const t = this.track(event.data.runId, event.at);
        t.commitPending = { stop: event.data.stop === 'stop', reason: event.data.reason };
        if (event.data.reason === 'interrupted') {
          // An interrupted run's commit is what it kept: its finished messages, a tool round it closed and the
          // text it was streaming, which no `message` event carried.
          t.messages.length = t.unassigned;
          t.messages.push(...event.data.messages.map((message) => ({ nodeId: null, message })));
        }
        break;
      }
      case 'tree': {
        for (const t of this.runs.values()) {
          if (!t.commitPending) continue;
          const ids = [...event.data.newNodes];
          for (const m of t.messages.slice(t.unassigned)) {
            const id = ids.shift();
            if (id === undefined) break;
            m.nodeId ??= id;
          }
          t.unassigned = t.messages.length;
          const { stop, reason } = t.commitPending;
          t.commitPending = null;
          if (stop) this.settle(t, endOf(reason), null, event.at);
        }
        break;
      }
      case 'pause': {
        const t = this.track(event.data.runId, event.at);
        t.awaiting = event.data.toolUses.map((u) => u.id);
        this.settle(t, 'paused', null, event.at);
        break;
      }
      case 'cancelled': {
        // The run's uncommitted messages, with the assistant message it was streaming: keep what is new.
        const t = this.track(event.data.runId, event.at);
        const uncommitted = t.messages.length - t.unassigned;
        for (const message of event.data.partial.slice(uncommitted))
          t.messages.push({ nodeId: null, message });
        this.settle(t, 'cancelled', null, event.at);
        break;
      }
      case 'error':
        if (event.data.runId) {
          this.settle(
            this.track(event.data.runId, event.at),
            'error',
            {
              code: event.data.code,
              message: event.data.message,
              ...(event.data.details ? { details: event.data.details } : {}),
            },
            event.at,
          );
        }
        break;
      default:
        break;
    }
    this.prune(event.at);
  }

  /**
   * Starts following a run that paused before this tracker saw it (a session opened while paused): its
   * uncommitted messages, and the tool uses it awaits.
   */
  paused(runId: string, messages: RunMessage[], awaiting: string[], at: number): void {
    const t = this.track(runId, at);
    if (t.messages.length > 0 || t.result) return;
    t.messages.push(...messages);
    t.awaiting = awaiting;
    this.settle(t, 'paused', null, at);
  }

  /** The run's result once it completes, pauses, fails or is cancelled. */
  wait(runId: string): Promise<RunResult> {
    const t = this.runs.get(runId) ?? this.track(runId, Date.now(), false);
    if (t.result) return Promise.resolve(t.result);
    return new Promise((resolve) => t.waiters.push(resolve));
  }

  /** Current result of a run if it has ended (or paused). */
  result(runId: string): RunResult | null {
    return this.runs.get(runId)?.result ?? null;
  }

  /** Runs followed now: those running, paused, or finished within keepMs (at most MAX_FINISHED of these). */
  get size(): number {
    return this.runs.size;
  }

  /**
   * A session runs one run at a time, so when `runId` starts every other run still running here has ended, in
   * events this tracker never got (a Redis that restarted empty loses them; the bus skips what its log no longer
   * holds). Without this such a run would be followed for ever and its waiters never answered.
   */
  private settleUnseen(runId: string, at: number): void {
    for (const t of this.runs.values()) {
      if (t.runId === runId || !t.started || t.result || t.commitPending) continue;
      this.settle(
        t,
        'error',
        {
          code: 'unavailable',
          message: 'how this run ended was not seen here (its events were lost); GET /v1/runs/:id has it',
        },
        at,
      );
    }
  }

  private track(runId: string, at: number, started = true): Tracked {
    let t = this.runs.get(runId);
    if (t) {
      t.started ||= started;
    } else {
      t = {
        runId,
        startedAt: at,
        messages: [],
        unassigned: 0,
        commitPending: null,
        awaiting: [],
        usage: emptyUsage(),
        result: null,
        waiters: [],
        finishedAt: null,
        started,
      };
      this.runs.set(runId, t);
    }
    return t;
  }

  private settle(t: Tracked, status: RunEnd, error: RunResult['error'], at: number): void {
    t.result = {
      runId: t.runId,
      status,
      messages: t.messages.map((m) => ({ ...m })),
      error,
      awaiting: status === 'paused' ? [...t.awaiting] : [],
      usage: t.usage,
      durationMs: Math.max(0, at - t.startedAt),
    };
    if (status !== 'paused') {
      t.finishedAt = at;
      this.finished.push(t.runId);
    }
    const waiters = t.waiters;
    t.waiters = [];
    for (const w of waiters) w(t.result);
  }

  private prune(now: number): void {
    while (this.finished.length > 0) {
      const t = this.runs.get(this.finished[0]!);
      const expired = !t || t.finishedAt === null || now - t.finishedAt > this.keepMs;
      if (!expired && this.finished.length <= MAX_FINISHED) return;
      this.finished.shift();
      if (t && t.finishedAt !== null) this.runs.delete(t.runId);
    }
  }
}

/** How a run that committed its end ended, by the commit's reason (a newer prompt's interrupt is a cancel). */
function endOf(reason: string): RunEnd {
  if (reason === 'max_steps') return 'max_steps';
  return reason === 'interrupted' ? 'cancelled' : 'completed';
}
