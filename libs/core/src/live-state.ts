// The live view of one session as a projection of its events: the committed tree, the session's fields and
// status, and the run in flight (pending messages, the partial assistant message, tool uses awaiting a
// decision). Every instance that serves a session builds the same view from the same ordered events, so a
// subscriber can start from a snapshot of it and continue with the events after its seq; a client (the SDK)
// keeps the same view of the events it receives. Pure: no I/O.

import type { InFlight, SessionEventBody, SessionInfo, SessionSnapshot } from './events';
import type { AssistantBlock, Message } from './message';
import { Tree, type NodeId, type TreeNode } from './tree';

export interface LiveStateInit {
  info: SessionInfo;
  nodes: TreeNode[];
  path: NodeId[];
  cursors: Record<string, NodeId>;
  nextNodeId: number;
  inFlight: InFlight | null;
  seq: number;
}

export class LiveState {
  private readonly tree: Tree;
  private info: SessionInfo;
  private inFlight: InFlight | null;
  private partialBlocks: AssistantBlock[] | null = null;
  /**
   * The blocks changed since `inFlight.partial` was built: it is built again when read (runInFlight, snapshot), not
   * on every delta (a service instance applies every event of the sessions it serves; few are read in between).
   */
  private partialStale = false;
  /** When the partial message being streamed started (its timestamp), null: none started. */
  private partialAt: number | null = null;
  /** The node each pending message will take (a re-run after a takeover sends the same ids again). */
  private pendingIds: Array<number | undefined> = [];
  private lastSeq: number;

  constructor(init: LiveStateInit) {
    this.tree = Tree.hydrate({
      nodes: init.nodes,
      path: init.path,
      cursors: init.cursors,
      nextId: init.nextNodeId,
    });
    this.info = { ...init.info };
    this.inFlight = init.inFlight ? { ...init.inFlight, pending: [...init.inFlight.pending] } : null;
    this.pendingIds = (init.inFlight?.pending ?? []).map((_, i) => init.nextNodeId + i);
    this.lastSeq = init.seq;
  }

  get seq(): number {
    return this.lastSeq;
  }

  get status(): SessionInfo['status'] {
    return this.info.status;
  }

  get session(): SessionInfo {
    return this.info;
  }

  /** The committed tree (read it, don't change it: events do). */
  get committedTree(): Tree {
    return this.tree;
  }

  get runInFlight(): InFlight | null {
    this.settlePartial();
    return this.inFlight;
  }

  /** Applies an event; events at or below the current seq were already applied and are ignored. */
  apply(event: SessionEventBody): void {
    if (event.seq <= this.lastSeq) return;
    this.lastSeq = event.seq;
    switch (event.type) {
      case 'status': {
        this.info = { ...this.info, status: event.data.status };
        if (event.data.status === 'idle') this.endRun();
        else if (event.data.runId && this.inFlight?.runId !== event.data.runId)
          this.beginRun(event.data.runId, 'prompt');
        if (event.data.status === 'busy' && this.inFlight) this.inFlight.awaiting = [];
        break;
      }
      case 'message': {
        this.ensureRun(event.data.runId);
        // A run taken over by another worker runs again from its last commit: its messages replace those of
        // the attempt that died (same node ids) instead of following them.
        const again = event.data.nodeId === undefined ? -1 : this.pendingIds.indexOf(event.data.nodeId);
        if (again >= 0) {
          this.inFlight!.pending.length = again;
          this.pendingIds.length = again;
        }
        this.inFlight!.pending.push(event.data.message);
        this.pendingIds.push(event.data.nodeId);
        this.dropPartial();
        break;
      }
      case 'text_start':
      case 'thinking_start':
        this.ensureRun(event.data.runId);
        this.blocks()[event.data.index] =
          event.type === 'text_start' ? { type: 'text', text: '' } : { type: 'thinking', text: '' };
        this.syncPartial();
        break;
      case 'text_delta':
      case 'thinking_delta': {
        this.ensureRun(event.data.runId);
        const block = this.blocks()[event.data.index];
        if (block && (block.type === 'text' || block.type === 'thinking')) {
          this.blocks()[event.data.index] = { ...block, text: block.text + event.data.delta };
        } else {
          // joined mid-block: start it from what we have
          this.blocks()[event.data.index] = {
            type: event.type === 'text_delta' ? 'text' : 'thinking',
            text: event.data.delta,
          };
        }
        this.syncPartial();
        break;
      }
      case 'tool_use_start':
        this.ensureRun(event.data.runId);
        this.blocks()[event.data.index] = {
          type: 'tool_use',
          id: event.data.id,
          name: event.data.name,
          input: {},
        };
        this.syncPartial();
        break;
      case 'tool_use_end':
        this.ensureRun(event.data.runId);
        this.blocks()[event.data.index] = event.data.block;
        this.syncPartial();
        break;
      case 'pause':
        this.ensureRun(event.data.runId);
        this.inFlight!.awaiting = [...event.data.toolUses];
        break;
      case 'turn':
        // Committed: its messages move from the run into the tree (the `tree` event that follows adds them).
        if (this.inFlight?.runId === event.data.runId) {
          this.inFlight.pending = [];
          this.pendingIds = [];
          this.dropPartial();
        }
        break;
      case 'tree':
        for (const node of event.data.nodes) {
          if (!this.tree.has(node.id)) this.tree.addNode(node);
        }
        this.tree.restorePosition({
          path: event.data.path,
          cursors: new Map(Object.entries(event.data.cursors).map(([k, v]) => [Number(k), v])),
        });
        break;
      case 'cancelled':
      case 'error':
        if (!event.data.runId || this.inFlight?.runId === event.data.runId) this.endRun();
        break;
      case 'title':
        this.info = { ...this.info, title: event.data.title };
        break;
      case 'context':
        if (event.data.kind === 'meter') {
          const { tokens, window, strategy, summarizedThrough } = event.data;
          this.info = { ...this.info, context: { tokens, window, strategy, summarizedThrough } };
        }
        break;
      case 'state':
        this.info = {
          ...this.info,
          model: event.data.model,
          system: event.data.system,
          opts: event.data.opts,
          tools: event.data.tools,
          metadata: event.data.metadata,
        };
        break;
      default:
        break;
    }
  }

  snapshot(): SessionSnapshot {
    this.settlePartial();
    const data = this.tree.toJSON();
    return {
      seq: this.lastSeq,
      session: { ...this.info },
      tree: { nodes: data.nodes, path: data.path, cursors: data.cursors, head: this.tree.head },
      inFlight: this.inFlight
        ? {
            ...this.inFlight,
            pending: [...this.inFlight.pending],
            awaiting: [...this.inFlight.awaiting],
          }
        : null,
    };
  }

  /** Replaces the session fields (a reload from the store). */
  setInfo(info: SessionInfo): void {
    this.info = { ...info };
  }

  private beginRun(runId: string, kind: InFlight['kind']): void {
    this.inFlight = { runId, kind, pending: [], partial: null, awaiting: [] };
    this.pendingIds = [];
    this.dropPartial();
  }

  private ensureRun(runId: string): void {
    if (this.inFlight?.runId !== runId) this.beginRun(runId, 'prompt');
  }

  private endRun(): void {
    this.inFlight = null;
    this.pendingIds = [];
    this.dropPartial();
  }

  private blocks(): AssistantBlock[] {
    // Joined from a snapshot mid-message: its partial message is where the blocks being streamed start from.
    this.partialBlocks ??= this.inFlight?.partial
      ? [...(this.inFlight.partial.content as AssistantBlock[])]
      : [];
    return this.partialBlocks;
  }

  /** The blocks changed: the partial message is due to be built again (its timestamp is its first block's). */
  private syncPartial(): void {
    if (!this.inFlight) return;
    this.partialAt ??= this.inFlight.partial?.timestamp ?? Date.now();
    this.partialStale = true;
  }

  private settlePartial(): void {
    if (!this.partialStale) return;
    this.partialStale = false;
    if (!this.inFlight) return;
    this.inFlight.partial = {
      role: 'assistant',
      content: (this.partialBlocks ?? []).filter(Boolean),
      timestamp: this.partialAt ?? Date.now(),
    } satisfies Message;
  }

  /** The partial message ended (became a message, was committed, or its run ended). */
  private dropPartial(): void {
    this.partialBlocks = null;
    this.partialStale = false;
    this.partialAt = null;
    if (this.inFlight) this.inFlight.partial = null;
  }
}

/** The init of a LiveState from a subscription's snapshot (what a client starts from). */
export function liveStateInit(snapshot: SessionSnapshot): LiveStateInit {
  const nodes = snapshot.tree.nodes;
  return {
    info: snapshot.session,
    nodes,
    path: snapshot.tree.path,
    cursors: snapshot.tree.cursors,
    nextNodeId: nodes.reduce((max, n) => Math.max(max, n.id), 0) + 1,
    inFlight: snapshot.inFlight,
    seq: snapshot.seq,
  };
}
