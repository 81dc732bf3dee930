// A live list of UI turns (seed 000) for one session: the committed turns of its active path, plus the turn in
// flight (status `streaming`, no timestamp yet), kept current by applying the session's events to the same
// projection the service keeps (LiveState) and cutting it into turns with the core's turn functions. A run that
// fails leaves its turn with status `error` and the error until the next run starts. What a chat UI renders.

import {
  allTurns,
  isTurnBoundary,
  LiveState,
  liveStateInit,
  newTurn,
  type Message,
  type SessionEventBody,
  type SessionInfo,
  type ToolUseBlock,
  type Turn,
} from '@canopy/core';

export interface LiveTurnsView {
  /** Every turn of the active path, the one being streamed last (status `streaming`). */
  turns: Turn[];
  session: SessionInfo;
  /** Tool uses waiting for a decision while the session is paused. */
  awaiting: ToolUseBlock[];
  /** What server tools of the latest run reported (`tool_progress`), by tool use id; kept until the next run. */
  progress: Record<string, unknown[]>;
  /** The last run error seen since the view started (cleared when a new run starts). */
  error: { code: string; message: string } | null;
  /** The seq of the last event applied. */
  seq: number;
}

/** A run that failed: what it had streamed, and which turn it was (seed 000: that turn's status is `error`). */
interface FailedRun {
  error: string;
  /** The run's uncommitted messages: a failed prompt's turn stays visible with them. */
  messages: Message[];
  /** The user node a failed regeneration was answering (its turn shows the error), else null. */
  regenerated: number | null;
}

/** Keeps a LiveTurnsView from a snapshot and the events after it. Pure: the caller feeds it. */
export class TurnsProjection {
  private state: LiveState | null = null;
  private error: LiveTurnsView['error'] = null;
  private failed: FailedRun | null = null;
  /** The run that the last `status: idle` ended, as it stood: the `error` that follows may be its. */
  private ended: { runId: string; failed: (error: string) => FailedRun } | null = null;
  private progress: Record<string, unknown[]> = {};
  private progressRun: string | null = null;
  /** The committed tree's turns and path messages; only a snapshot or a `tree` event changes them (not deltas). */
  private committed: { turns: Turn[]; messages: Message[] } | null = null;

  /** Applies an event (a snapshot starts over); answers whether the view changed. */
  apply(event: SessionEventBody): boolean {
    if (event.type === 'snapshot') {
      this.state = new LiveState(liveStateInit(event.data));
      this.committed = null;
      this.failed = null;
      return true;
    }
    if (!this.state || event.seq <= this.state.seq) return false;
    if (event.type === 'error') {
      this.error = { code: event.data.code, message: event.data.message };
      const ended = this.ended;
      if (ended && (event.data.runId === null || event.data.runId === ended.runId)) {
        this.failed = ended.failed(event.data.message);
      }
    }
    if (event.type === 'status') {
      // `status` comes before the event that caused it: remember the run it ends, for an `error` to come.
      this.ended = event.data.status === 'idle' ? endingRun(this.state) : null;
      if (event.data.status === 'busy') {
        this.error = null;
        this.failed = null;
      }
    }
    if (event.type === 'status' && event.data.runId !== null && event.data.runId !== this.progressRun) {
      this.progressRun = event.data.runId;
      this.progress = {};
    }
    if (event.type === 'tool_progress') {
      const { toolUseId, payload } = event.data;
      this.progress = { ...this.progress, [toolUseId]: [...(this.progress[toolUseId] ?? []), payload] };
    }
    this.state.apply(event);
    if (event.type === 'tree') this.committed = null;
    return true;
  }

  get ready(): boolean {
    return this.state !== null;
  }

  view(): LiveTurnsView | null {
    const state = this.state;
    if (!state) return null;
    this.committed ??= { turns: allTurns(state.committedTree), messages: state.committedTree.messages() };
    const turns = [...this.committed.turns];
    const run = state.runInFlight;
    if (run) {
      const messages: Message[] = [...run.pending, ...(run.partial ? [run.partial] : [])];
      appendInFlight(turns, messages, this.committed.messages);
    } else if (this.failed) {
      markFailed(turns, this.failed, this.committed.messages);
    }
    return {
      turns,
      session: state.session,
      awaiting: run?.awaiting ?? [],
      progress: this.progress,
      error: this.error,
      seq: state.seq,
    };
  }
}

/**
 * Folds a run's uncommitted messages into the turns: a prompt starts a turn of its own; a regeneration or a
 * resumed run continues the last committed turn.
 */
function appendInFlight(turns: Turn[], messages: Message[], committedPath: Message[]): void {
  let rest = messages;
  const last = turns[turns.length - 1];
  if (rest.length > 0 && !isTurnBoundary(rest[0]!) && last) {
    // Continues the last turn: rebuild it from its committed messages plus the new ones.
    const start = lastBoundary(committedPath);
    const next = rest.findIndex(isTurnBoundary);
    const own = next === -1 ? rest : rest.slice(0, next);
    const rebuilt = newTurn(last.id, [...committedPath.slice(start), ...own], last.usage);
    turns[turns.length - 1] = { ...rebuilt, resId: last.resId, edits: last.edits, regens: last.regens };
    rest = next === -1 ? [] : rest.slice(next);
  }
  while (rest.length > 0) {
    const next = rest.slice(1).findIndex(isTurnBoundary);
    const chunk = next === -1 ? rest : rest.slice(0, next + 1);
    turns.push(newTurn(null, chunk));
    rest = next === -1 ? [] : rest.slice(next + 1);
  }
  const current = turns[turns.length - 1];
  // Seed 000: a streaming turn has no timestamp yet (it is the last assistant message's once finished).
  if (current) turns[turns.length - 1] = { ...current, status: 'streaming', timestamp: null };
}

/** The run in flight as a failure would leave it: its uncommitted messages, or the turn it regenerated. */
function endingRun(state: LiveState): { runId: string; failed: (error: string) => FailedRun } | null {
  const run = state.runInFlight;
  if (!run) return null;
  const messages: Message[] = [...run.pending, ...(run.partial ? [run.partial] : [])];
  const first = messages[0];
  if (first && isTurnBoundary(first)) {
    return { runId: run.runId, failed: (error) => ({ error, messages, regenerated: null }) };
  }
  // A regeneration: the branch moved the path to end on the user node it answers.
  const head = state.committedTree.head;
  const node = head !== null ? state.committedTree.getNode(head) : undefined;
  const regenerated = node && isTurnBoundary(node.message) ? node.id : null;
  return { runId: run.runId, failed: (error) => ({ error, messages: [], regenerated }) };
}

/** Shows a failed run's turn with status `error` and the error (seed 000). */
function markFailed(turns: Turn[], failed: FailedRun, committedPath: Message[]): void {
  if (failed.messages.length > 0) {
    appendInFlight(turns, failed.messages, committedPath);
    const last = turns[turns.length - 1]!;
    const assistants = failed.messages.filter((m) => m.role === 'assistant');
    turns[turns.length - 1] = {
      ...last,
      status: 'error',
      error: failed.error,
      timestamp: assistants[assistants.length - 1]?.timestamp ?? null,
    };
    return;
  }
  const at = turns.findIndex((t) => t.id !== null && t.id === failed.regenerated);
  if (at >= 0) turns[at] = { ...turns[at]!, status: 'error', error: failed.error };
}

function lastBoundary(messages: Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (isTurnBoundary(messages[i]!)) return i;
  return 0;
}
