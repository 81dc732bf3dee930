// The live view of one session as a projection of its events: the committed tree, the session's fields and
// status, and the run in flight (pending messages, the partial assistant message, tool uses awaiting a
// decision). Every instance that serves a session builds the same view from the same ordered events, so a
// subscriber can start from a snapshot of it and continue with the events after its seq; a client (the SDK)
// keeps the same view of the events it receives. Pure: no I/O.
//
// Bounded: with a path bound, the view keeps of the committed tree only what a live view shows, the active path's
// last `pathBound` nodes, the versions (siblings) of each and the children of the head; the rest is dropped as the
// path moves on, and read from the store (the tree and turns routes) by whoever needs it. A `tree` event that moves
// the path onto nodes not held leaves a gap (`missingNodes`) until `fill` brings them; meanwhile the view and its
// snapshots show the part after the gap.

import type { InFlight, SessionEventBody, SessionInfo, SessionSnapshot } from './events';
import type { AssistantBlock, Message } from './message';
import { isTurnBoundary } from './message';
import { Tree, type NodeId, type TreeNode } from './tree';

/** How many of the active path's last nodes a live session keeps by default (LIVE_PATH_NODES). */
export const DEFAULT_LIVE_PATH_NODES = 20;

export interface LiveStateInit {
  info: SessionInfo;
  nodes: TreeNode[];
  path: NodeId[];
  cursors: Record<string, NodeId>;
  nextNodeId: number;
  inFlight: InFlight | null;
  seq: number;
  /**
   * `nodes` leave some of the session's nodes out (a partial snapshot); `omitted`: how many nodes of the active
   * path come before `path[0]`. Absent: `nodes` are the whole tree and `path` the whole path.
   */
  partial?: { omitted: number };
  /**
   * Keep only the active path's last `pathBound` nodes, the versions (siblings) of each and the children of the
   * head; drop the rest as the path moves on. Absent: keep every node.
   */
  pathBound?: number;
}

export class LiveState {
  private tree: Tree;
  /** How many of the active path's last nodes are kept (Infinity: all). */
  private readonly bound: number;
  /** The active path's last `bound` ids (some may not be held yet: see missingNodes). */
  private window: NodeId[];
  /** How many nodes of the active path come before `window`. */
  private omitted: number;
  /** Every node of the session is held (nothing was ever dropped or left out). */
  private whole: boolean;
  /** The tree's size above which the nodes no longer needed are dropped (so dropping costs O(1) a node). */
  private pruneAbove = 0;
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
    this.bound = Math.max(1, init.pathBound ?? Infinity);
    this.whole = init.partial === undefined;
    const from = Math.max(0, init.path.length - this.bound);
    this.omitted = (init.partial?.omitted ?? 0) + from;
    this.window = init.path.slice(from);
    const cursors = init.cursors;
    this.tree = Tree.hydrate({ nodes: [], path: [], cursors: {}, nextId: init.nextNodeId, partial: true });
    this.reshape(init.nodes, cursors);
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

  /**
   * The committed tree held (read it, don't change it: events do): with a path bound, its path is the active path's
   * recent part held (see `holdsWholeTree`).
   */
  get committedTree(): Tree {
    return this.tree;
  }

  /** Whether the committed tree held is the session's whole tree and its path the whole active path. */
  get holdsWholeTree(): boolean {
    return this.whole && this.omitted === 0 && this.tree.path.length === this.window.length;
  }

  /** The last node of the active path (held or not). */
  get head(): NodeId | null {
    return this.window.length > 0 ? this.window[this.window.length - 1]! : null;
  }

  /** How many nodes of the active path come before the committed tree's path (not held). */
  get pathOmitted(): number {
    return this.omitted + this.window.length - this.tree.path.length;
  }

  /** Nodes of the active path's recent part that are not held (a `tree` event moved the path onto them). */
  get missingNodes(): NodeId[] {
    return this.window.filter((id) => !this.tree.has(id));
  }

  /**
   * Brings nodes read from the store (of this session: committed nodes never change): those the bounded view needs
   * are kept, the missing nodes of the path and their versions among them.
   */
  fill(nodes: Iterable<TreeNode>): void {
    this.reshape(nodes, null);
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
      case 'tree': {
        for (const node of event.data.nodes) {
          if (!this.tree.has(node.id)) this.tree.addNode(node);
        }
        const path = event.data.path;
        const from = Math.max(0, path.length - this.bound);
        this.window = from === 0 ? [...path] : path.slice(from);
        this.omitted = from;
        this.place(event.data.cursors);
        if (this.bound !== Infinity && this.tree.size > this.pruneAbove) this.reshape([], null);
        break;
      }
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

  /**
   * The state a subscriber starts from. Its tree is what the bounded view needs (the path's recent part held, the
   * versions of its nodes, the children of its head), marked `partial` when the path starts after the root.
   */
  snapshot(): SessionSnapshot {
    this.settlePartial();
    const { nodes, cursors } = liveViewOf(this.tree, this.tree.path, this.head);
    const path = [...this.tree.path];
    const omitted = this.pathOmitted;
    return {
      seq: this.lastSeq,
      session: { ...this.info },
      tree: {
        nodes: [...nodes.values()].sort((a, b) => a.id - b.id),
        path,
        cursors,
        head: this.head,
        ...(omitted > 0 ? { partial: { firstNodeId: path[0] ?? null, omitted } } : {}),
      },
      inFlight: this.inFlight
        ? {
            ...this.inFlight,
            pending: [...this.inFlight.pending],
            awaiting: [...this.inFlight.awaiting],
          }
        : null,
    };
  }

  /**
   * Rebuilds the tree held from its nodes and `extra` (what fill brings, or an init's nodes): keeps what the
   * bounded view needs (everything without a bound), with `cursors` (null: the current ones), and puts the path.
   */
  private reshape(extra: Iterable<TreeNode>, cursors: Record<string, NodeId> | null): void {
    const current = cursors ?? this.cursorRecord();
    const pool = Tree.hydrate({
      nodes: uniqueNodes(this.tree.allNodes(), extra),
      path: [],
      cursors: {},
      nextId: this.tree.nextId,
      partial: true,
    });
    let nodes: Iterable<TreeNode> = pool.allNodes();
    if (this.bound !== Infinity) {
      const kept = liveViewOf(pool, this.window, this.head).nodes;
      if (kept.size < pool.size) this.whole = false;
      nodes = [...kept.values()].sort((a, b) => a.id - b.id);
    }
    this.tree = Tree.hydrate({ nodes, path: [], cursors: {}, nextId: pool.nextId, partial: true });
    this.place(current);
    this.pruneAbove = 2 * this.tree.size + 64;
  }

  /** Puts the path (the held part at the end of the window) and the cursors of the nodes held. */
  private place(cursors: Record<string, NodeId>): void {
    let start = this.window.length;
    while (start > 0 && this.tree.has(this.window[start - 1]!)) start--;
    // After a gap the path starts at a prompt (a turn is shown whole or not at all).
    if (start > 0 || this.omitted > 0) {
      let prompt = start;
      while (prompt < this.window.length && !isTurnBoundary(this.tree.getNode(this.window[prompt]!)!.message))
        prompt++;
      if (prompt < this.window.length) start = prompt;
    }
    const held = new Map<NodeId, NodeId>();
    for (const [k, v] of Object.entries(cursors)) {
      const parent = Number(k);
      if (this.tree.getNode(v)?.parentId === parent) held.set(parent, v);
    }
    this.tree.restorePosition({ path: start === 0 ? this.window : this.window.slice(start), cursors: held });
  }

  private cursorRecord(): Record<string, NodeId> {
    const cursors: Record<string, NodeId> = {};
    for (const [k, v] of this.tree.cursors) cursors[String(k)] = v;
    return cursors;
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
  const partial = snapshot.tree.partial;
  return {
    info: snapshot.session,
    nodes,
    path: snapshot.tree.path,
    cursors: snapshot.tree.cursors,
    nextNodeId: nodes.reduce((max, n) => Math.max(max, n.id), 0) + 1,
    inFlight: snapshot.inFlight,
    seq: snapshot.seq,
    ...(partial ? { partial: { omitted: partial.omitted } } : {}),
  };
}

/**
 * What a bounded live view needs of `source`: the nodes of `path` (the active path's recent part), the children of
 * each one's parent (its versions) and of `head`, and the cursors among them.
 */
export function liveViewOf(
  source: Tree,
  path: readonly NodeId[],
  head: NodeId | null,
): { nodes: Map<NodeId, TreeNode>; cursors: Record<string, NodeId> } {
  const nodes = new Map<NodeId, TreeNode>();
  const cursors: Record<string, NodeId> = {};
  const parents = new Set<NodeId | null>();
  for (const id of path) {
    const node = source.getNode(id);
    if (!node) continue;
    nodes.set(id, node);
    parents.add(node.parentId);
  }
  if (head !== null) parents.add(head);
  for (const parent of parents) {
    for (const child of parent === null ? source.roots() : source.children(parent)) {
      nodes.set(child, source.getNode(child)!);
    }
  }
  for (const [parent, child] of source.cursors) {
    if (nodes.has(child) && (nodes.has(parent) || parents.has(parent))) cursors[String(parent)] = child;
  }
  return { nodes, cursors };
}

/** `first`'s nodes, then those of `more` not among them. */
function uniqueNodes(first: TreeNode[], more: Iterable<TreeNode>): TreeNode[] {
  const seen = new Set(first.map((n) => n.id));
  const all = [...first];
  for (const node of more) {
    if (!seen.has(node.id)) {
      seen.add(node.id);
      all.push(node);
    }
  }
  return all;
}
