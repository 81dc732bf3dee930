// A live list of UI turns (each prompt with its reply and its versions) for one session: the committed turns of its active path, plus the turn in
// flight, kept current by applying the session's events to the same projection the service keeps (LiveState)
// and cutting it into turns with the core's turn functions. What a chat UI renders. A long session's snapshot
// carries the path's recent part only: earlier turns are pages read as the user scrolls up (`hasEarlier`).

import {
  allTurns,
  isTurnBoundary,
  LiveState,
  liveStateInit,
  newTurn,
  type InFlight,
  type Message,
  type NodeId,
  type SessionEventBody,
  type SessionInfo,
  type ToolUseBlock,
  type Turn,
  type RunError,
} from '@canopy/core';

export interface LiveTurnsView {
  /** Every turn of the active path, the one being streamed last (status `streaming`, timestamp null). */
  turns: Turn[];
  session: SessionInfo;
  /** Tool uses waiting for a decision while the session is paused. */
  awaiting: ToolUseBlock[];
  /** What server tools of the latest run reported (`tool_progress`), by tool use id; kept until the next run. */
  progress: Record<string, unknown[]>;
  /** The last run error seen since the view started (cleared when a new run starts). */
  error: RunError | null;
  /**
   * The latest run that was cancelled or failed, with what it had produced (kept until the next run starts):
   * nothing of it is in `turns` (it committed nothing), so a UI can still show the prompt and the partial reply.
   */
  interrupted: InterruptedRun | null;
  /** The seq of the last event applied. */
  seq: number;
  /** Turns come before `turns[0]` that are not loaded (a long session: load them with `loadEarlier`). */
  hasEarlier: boolean;
}

/** A page of earlier turns (GET /v1/sessions/:id/turns with `before` and `limit`). */
export interface TurnsPage {
  data: Turn[];
  hasEarlier: boolean;
}

export interface InterruptedRun {
  runId: string;
  status: 'cancelled' | 'error';
  error: RunError | null;
  /**
   * The run's turn as it stood: a prompt's own turn (id null), or — for a regeneration or a resumed run — the
   * turn it continued, with the partial reply in place of the committed one.
   */
  turns: Turn[];
}

/** A run's messages that are no longer in flight and not yet in the committed tree. */
interface Settling {
  runId: string | null;
  messages: Message[];
}

/**
 * Keeps a LiveTurnsView from a snapshot and the events after it. Pure: the caller feeds it.
 *
 * Every view it answers is consistent: a run's commit arrives as `status` idle, `turn`, then `tree`, and in
 * between the run's messages are neither in flight nor in the tree; they stay in the view (`settling`) until
 * the tree has them, so no subscriber ever sees a finished turn vanish for one notification.
 */
export class TurnsProjection {
  private state: LiveState | null = null;
  private error: LiveTurnsView['error'] = null;
  private progress: Record<string, unknown[]> = {};
  private progressRun: string | null = null;
  private settling: Settling | null = null;
  private interrupted: InterruptedRun | null = null;
  private lastRunId: string | null = null;
  /** The committed tree's turns and path messages; only a snapshot or a `tree` event changes them (not deltas). */
  private committed: { turns: Turn[]; messages: Message[] } | null = null;
  /** Earlier turns loaded in pages (before what the live state holds), oldest first. */
  private earlier: Turn[] = [];
  /** Whether turns come before `earlier` (null: no page loaded yet). */
  private earlierMore: boolean | null = null;
  /** The node the first page was loaded before: the pages hold while the active path still goes through it. */
  private earlierBase: NodeId | null = null;

  /**
   * Applies an event (a snapshot starts over); answers whether subscribers should see the new view (false for
   * events already applied, and for the steps of a commit before its `tree`).
   */
  apply(event: SessionEventBody): boolean {
    if (event.type === 'snapshot') {
      this.state = new LiveState(liveStateInit(event.data));
      this.committed = null;
      this.settling = null;
      this.interrupted = null;
      this.lastRunId = event.data.inFlight?.runId ?? null;
      this.dropEarlier();
      return true;
    }
    if (!this.state || event.seq <= this.state.seq) return false;
    const run = this.state.runInFlight;
    const inFlight = run ? inFlightMessages(run) : [];
    if (event.type === 'error') this.error = { code: event.data.code, message: event.data.message };
    if (event.type === 'status' && event.data.status === 'busy') this.error = null;
    if (event.type === 'status' && event.data.runId !== null && event.data.runId !== this.progressRun) {
      this.progressRun = event.data.runId;
      this.progress = {};
    }
    if (event.type === 'tool_progress') {
      const { toolUseId, payload } = event.data;
      this.progress = { ...this.progress, [toolUseId]: [...(this.progress[toolUseId] ?? []), payload] };
    }
    const settlingBefore = this.settling !== null;
    this.trackRunEnd(event, run?.runId ?? null, inFlight);
    this.state.apply(event);
    if (event.type === 'tree') {
      this.committed = null;
      // Moved to another branch: the pages loaded are of a path no longer shown.
      if (this.earlierBase !== null && !event.data.path.includes(this.earlierBase)) this.dropEarlier();
    }
    // A commit is one change to a reader: from the run streaming to its turn saved. `status` idle and `turn`
    // before the `tree` that saves the messages change nothing anyone should see on its own (the turn would
    // show idle but unsaved), so they are applied without a notification; the `tree` (or a cancel or error)
    // then shows the whole change at once.
    const midCommit =
      this.settling !== null &&
      ((event.type === 'status' && event.data.status === 'idle' && !settlingBefore) || event.type === 'turn');
    return !midCommit;
  }

  /** Where a run's messages are while it ends: settling until the tree has them, or interrupted. */
  private trackRunEnd(event: SessionEventBody, runId: string | null, inFlight: Message[]): void {
    switch (event.type) {
      case 'status':
        if (event.data.status === 'idle') {
          if (inFlight.length > 0) this.settling = { runId, messages: inFlight };
        } else if (event.data.runId !== null && event.data.runId !== this.lastRunId) {
          // A new run: whatever an earlier one left behind is history now.
          this.lastRunId = event.data.runId;
          this.settling = null;
          this.interrupted = null;
        }
        break;
      case 'turn':
        // Committed: exactly these messages join the tree with the `tree` event that follows.
        this.settling = { runId: event.data.runId, messages: event.data.messages };
        break;
      case 'tree':
        this.settling = null;
        break;
      case 'cancelled':
      case 'error': {
        const messages =
          event.type === 'cancelled' && event.data.partial.length > 0
            ? event.data.partial
            : (this.settling?.messages ?? inFlight);
        const id = event.data.runId ?? this.settling?.runId ?? runId;
        // A regeneration that failed before writing anything still failed its turn: the turn it answered (the
        // path ends on its prompt until the rollback) is kept as interrupted, marked with the error.
        const failedRegeneration =
          event.type === 'error' &&
          messages.length === 0 &&
          this.committedView().turns.at(-1)?.resId === null;
        if (id && (messages.length > 0 || failedRegeneration)) {
          const error =
            event.type === 'error' ? { code: event.data.code, message: event.data.message } : null;
          this.interrupted = this.interruptedRun(id, event.type, error, messages);
        }
        this.settling = null;
        break;
      }
      default:
        break;
    }
  }

  get ready(): boolean {
    return this.state !== null;
  }

  /**
   * Where the next page of earlier turns ends: before the first turn loaded or held (null: none is, read the last
   * page). Undefined when there is nothing earlier to load.
   */
  earlierAnchor(): NodeId | null | undefined {
    if (!this.state || !this.hasEarlier()) return undefined;
    const first = this.earlier[0]?.id ?? this.committedView().turns[0]?.id;
    return first ?? this.state.committedTree.path[0] ?? null;
  }

  /** Adds a page of earlier turns read before `anchor` (ignored when the view moved on since it was asked). */
  addEarlier(anchor: NodeId | null, page: TurnsPage): boolean {
    if (this.earlierAnchor() !== anchor) return false;
    this.earlier = [...page.data, ...this.earlier];
    this.earlierMore = page.hasEarlier;
    this.earlierBase ??= anchor ?? page.data.at(-1)?.id ?? null;
    return true;
  }

  private hasEarlier(): boolean {
    return this.earlierMore ?? this.state!.pathOmitted > 0;
  }

  private dropEarlier(): void {
    this.earlier = [];
    this.earlierMore = null;
    this.earlierBase = null;
  }

  view(): LiveTurnsView | null {
    const state = this.state;
    if (!state) return null;
    const committed = this.committedView();
    // Node ids grow along a path: a page's turns older than the first one held are those not held.
    const firstHeld = committed.turns[0]?.id;
    const earlier =
      firstHeld === undefined || firstHeld === null
        ? this.earlier
        : this.earlier.filter((t) => t.id !== null && t.id < firstHeld);
    const turns = [...earlier, ...committed.turns];
    const run = state.runInFlight;
    const messages = [...(this.settling?.messages ?? []), ...(run ? inFlightMessages(run) : [])];
    if (messages.length > 0 || run) {
      appendInFlight(turns, messages, committed.messages, run !== null && state.status !== 'idle');
    }
    return {
      turns,
      session: state.session,
      awaiting: run?.awaiting ?? [],
      progress: this.progress,
      error: this.error,
      interrupted: this.interrupted,
      seq: state.seq,
      hasEarlier: this.hasEarlier(),
    };
  }

  /**
   * Freezes an interrupted run's turn as it stood, against the committed tree of that moment (before a
   * branch's rollback restores the earlier path).
   */
  private interruptedRun(
    runId: string,
    status: InterruptedRun['status'],
    error: InterruptedRun['error'],
    messages: Message[],
  ): InterruptedRun {
    const committed = this.committedView();
    const continues = messages.length === 0 || !isTurnBoundary(messages[0]!);
    // A continuation (regeneration, resumed run) shows the turn it continued; a prompt shows its own turn.
    const base = continues ? committed.turns[committed.turns.length - 1] : undefined;
    const turns = base ? [base] : [];
    appendInFlight(turns, messages, base ? committed.messages : [], false);
    return {
      runId,
      status,
      error,
      turns: turns.map((t) => ({
        ...t,
        status: status === 'error' ? 'error' : 'complete',
        error: status === 'error' ? (error?.message ?? 'the run failed') : 'cancelled',
      })),
    };
  }

  private committedView(): { turns: Turn[]; messages: Message[] } {
    const tree = this.state!.committedTree;
    this.committed ??= { turns: allTurns(tree), messages: tree.messages() };
    return this.committed;
  }
}

function inFlightMessages(run: InFlight): Message[] {
  return [...run.pending, ...(run.partial ? [run.partial] : [])];
}

/**
 * Folds a run's uncommitted messages into the turns: a prompt starts a turn of its own; a regeneration or a
 * resumed run continues the last committed turn. `streaming` marks the turn the run is writing: the last one,
 * when the run has written to it or it still waits for its reply (a regeneration before its first word).
 */
function appendInFlight(
  turns: Turn[],
  messages: Message[],
  committedPath: Message[],
  streaming: boolean,
): void {
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
  const waitsForReply = current !== undefined && current.content.length === 0;
  if (streaming && current && (messages.length > 0 || waitsForReply)) {
    // A streaming turn has no timestamp yet (it is its last assistant message's once committed).
    turns[turns.length - 1] = { ...current, status: 'streaming', timestamp: null };
  }
}

function lastBoundary(messages: Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (isTurnBoundary(messages[i]!)) return i;
  return 0;
}
