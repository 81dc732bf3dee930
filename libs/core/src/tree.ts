// The branching message tree: every message is a node with a parent pointer; an active path
// (root -> head) says which branch is live, and cursors remember the child last selected under each parent so
// `extend` can walk back down a branch. Nodes are never removed or rewritten.
//
// Mutable on purpose: a session appends thousands of nodes and every operation here is O(depth) or O(1), never a
// copy of the tree. Indexes (children per parent, kept in ascending id order) make children/siblings/extend cheap.

import type { Message } from './message';
import { sumUsage, type Usage } from './usage';

export type NodeId = number;

export interface TreeNode {
  readonly id: NodeId;
  readonly parentId: NodeId | null;
  readonly message: Message;
  readonly usage: Usage | null;
}

/** The persisted form of a tree: what hydrate takes and toJSON gives. Cursor keys are parent ids. */
export interface TreeData {
  nodes: TreeNode[];
  path: NodeId[];
  cursors: Record<string, NodeId>;
  /** The id the next push takes (can exceed max(id) + 1 when the store reserved ids). */
  nextId: NodeId;
}

export interface TreeInit {
  nodes?: Iterable<TreeNode>;
  path?: readonly NodeId[];
  cursors?: Record<string, NodeId> | ReadonlyMap<NodeId, NodeId>;
  /** The id the next push gets, when the store tracks it; never below max(id) + 1. */
  nextId?: number;
  /**
   * Some of the session's nodes are left out (a live view's recent part): a node's parent may be missing, and the
   * path may start below a root (at a node whose parent is left out). Everything present is still checked.
   */
  partial?: boolean;
}

/** Where the active path stands: enough to undo a navigation (a branch that never committed). */
export interface TreePosition {
  readonly path: readonly NodeId[];
  readonly cursors: ReadonlyMap<NodeId, NodeId>;
}

export class UnknownNodeError extends Error {
  readonly code = 'not_found';
  constructor(readonly nodeId: NodeId) {
    super(`node ${nodeId} does not exist in this tree`);
    this.name = 'UnknownNodeError';
  }
}

/** Persisted data that cannot form a tree (a dangling parent, a broken path or cursor). */
export class InvalidTreeError extends Error {
  readonly code = 'invalid_tree';
  constructor(message: string) {
    super(message);
    this.name = 'InvalidTreeError';
  }
}

export class Tree implements Iterable<TreeNode> {
  private readonly byId = new Map<NodeId, TreeNode>();
  /** Children per parent in ascending id order; the key `null` holds the roots. */
  private readonly kids = new Map<NodeId | null, NodeId[]>();
  private readonly cursorMap = new Map<NodeId, NodeId>();
  private activePath: NodeId[] = [];
  private next = 1;
  private partialTree = false;

  /**
   * Rebuilds a tree from persisted nodes, path and cursors, checking that they form a tree: every parent exists
   * and is older than its child, the path is a parent chain from a root, every cursor points at a child of its
   * key. New ids continue after the highest persisted one, so sparse ids never collide.
   */
  static hydrate(init: TreeInit = {}): Tree {
    const tree = new Tree();
    tree.partialTree = init.partial === true;
    let maxId = 0;
    for (const node of init.nodes ?? []) {
      if (!Number.isInteger(node.id) || node.id < 1) throw new InvalidTreeError(`invalid node id ${node.id}`);
      if (tree.byId.has(node.id)) throw new InvalidTreeError(`duplicate node id ${node.id}`);
      tree.byId.set(node.id, freezeNode(node));
      if (node.id > maxId) maxId = node.id;
    }
    for (const node of tree.byId.values()) {
      if (node.parentId !== null) {
        if (!tree.byId.has(node.parentId) && !tree.partialTree) {
          throw new InvalidTreeError(`node ${node.id} has unknown parent ${node.parentId}`);
        }
        if (node.parentId >= node.id) {
          throw new InvalidTreeError(`node ${node.id} is not younger than its parent ${node.parentId}`);
        }
      }
      tree.childList(node.parentId).push(node.id);
    }
    for (const list of tree.kids.values()) list.sort((a, b) => a - b);

    const path = [...(init.path ?? [])];
    path.forEach((id, i) => {
      const node = tree.byId.get(id);
      if (!node) throw new InvalidTreeError(`path holds unknown node ${id}`);
      const expectedParent = i === 0 ? null : path[i - 1];
      const startsBelowRoot = i === 0 && tree.partialTree && !tree.byId.has(node.parentId ?? 0);
      if (node.parentId !== expectedParent && !startsBelowRoot) {
        throw new InvalidTreeError(`path is not a parent chain at node ${id}`);
      }
    });
    tree.activePath = path;

    const cursorEntries: Iterable<[NodeId | string, NodeId]> =
      init.cursors instanceof Map ? init.cursors.entries() : Object.entries(init.cursors ?? {});
    for (const [key, child] of cursorEntries) {
      const parent = Number(key);
      if (tree.byId.get(child)?.parentId !== parent || (!tree.byId.has(parent) && !tree.partialTree)) {
        throw new InvalidTreeError(`cursor ${parent} -> ${child} does not point at a child`);
      }
      tree.cursorMap.set(parent, child);
    }

    tree.next = Math.max(maxId + 1, init.nextId ?? 1);
    return tree;
  }

  // Query

  /** Whether some of the session's nodes are left out (see TreeInit.partial). */
  get partial(): boolean {
    return this.partialTree;
  }

  /** Total number of nodes, abandoned branches included. */
  get size(): number {
    return this.byId.size;
  }

  /** The last node of the active path, or null when the path is empty. */
  get head(): NodeId | null {
    return this.activePath.length === 0 ? null : this.activePath[this.activePath.length - 1]!;
  }

  /** The active path, root first. A read-only view: change it with push/navigate/extend. */
  get path(): readonly NodeId[] {
    return this.activePath;
  }

  get cursors(): ReadonlyMap<NodeId, NodeId> {
    return this.cursorMap;
  }

  /** The id the next push will take. */
  get nextId(): NodeId {
    return this.next;
  }

  has(id: NodeId): boolean {
    return this.byId.has(id);
  }

  getNode(id: NodeId): TreeNode | undefined {
    return this.byId.get(id);
  }

  getMessage(id: NodeId): Message | undefined {
    return this.byId.get(id)?.message;
  }

  /** Messages along the active path, root first. */
  messages(): Message[] {
    return this.activePath.map((id) => this.byId.get(id)!.message);
  }

  /** Usage summed over every node of the tree, abandoned branches included. */
  usage(): Usage {
    const usages: Array<Usage | null> = [];
    for (const node of this.byId.values()) usages.push(node.usage);
    return sumUsage(usages);
  }

  /** Ids of the children of a node, ascending; [] for a leaf or an unknown id. */
  children(id: NodeId): NodeId[] {
    return [...(this.kids.get(id) ?? [])];
  }

  /** Ids of the other children of the node's parent; for a root, the other roots. [] for an unknown id. */
  siblings(id: NodeId): NodeId[] {
    const node = this.byId.get(id);
    if (!node) return [];
    return (this.kids.get(node.parentId) ?? []).filter((other) => other !== id);
  }

  /**
   * The child each parent leads to (its cursor, else its newest child: what extend follows), for every node with
   * children: the cursors as a reader wants them, whichever of them are stored.
   */
  selectedChildren(): Record<string, NodeId> {
    const selected: Record<string, NodeId> = {};
    for (const [parent, kids] of this.kids) {
      if (parent === null || kids.length === 0) continue;
      selected[String(parent)] = this.cursorMap.get(parent) ?? kids[kids.length - 1]!;
    }
    return selected;
  }

  /**
   * The cursors that say something: those pointing at another child than the newest, which `extend` follows without
   * a cursor. A child is the newest of its parent when added (push, and every commit after it), so a conversation
   * that only grows needs none, and a session's stored cursors stay as few as its branch choices, not as many as its
   * messages. A partial tree keeps every cursor (a parent's newest child may not be held).
   */
  essentialCursors(): Record<string, NodeId> {
    const cursors: Record<string, NodeId> = {};
    for (const [parent, child] of this.cursorMap) {
      const kids = this.kids.get(parent);
      if (this.partialTree || !kids || kids[kids.length - 1] !== child) cursors[String(parent)] = child;
    }
    return cursors;
  }

  /** Ids of every node without a parent, ascending. */
  roots(): NodeId[] {
    return [...(this.kids.get(null) ?? [])];
  }

  /**
   * Ids from the root down to the node, root first (in a partial tree, from the first ancestor present). Throws
   * UnknownNodeError for an unknown id.
   */
  pathTo(id: NodeId): NodeId[] {
    const reversed: NodeId[] = [];
    let node: TreeNode | undefined = this.byId.get(id);
    if (!node) throw new UnknownNodeError(id);
    while (node) {
      reversed.push(node.id);
      node = node.parentId === null ? undefined : this.byId.get(node.parentId);
    }
    return reversed.reverse();
  }

  /** Nodes of the active path, root first. */
  *[Symbol.iterator](): Iterator<TreeNode> {
    for (const id of this.activePath) yield this.byId.get(id)!;
  }

  /** Every node, in ascending id order. */
  allNodes(): TreeNode[] {
    return [...this.byId.values()].sort((a, b) => a.id - b.id);
  }

  // Mutate

  /** Appends a message at the head of the active path and points the parent's cursor at it. */
  push(message: Message, usage: Usage | null = null): this {
    this.pushNode(message, usage);
    return this;
  }

  /**
   * Adds a node that already has its id (a committed node arriving from elsewhere, e.g. a live projection
   * applying a `tree` event). Its parent must exist and be older; the active path and cursors do not move.
   * Throws InvalidTreeError otherwise, or for an id already in the tree.
   */
  addNode(node: TreeNode): this {
    if (!Number.isInteger(node.id) || node.id < 1) throw new InvalidTreeError(`invalid node id ${node.id}`);
    if (this.byId.has(node.id)) throw new InvalidTreeError(`duplicate node id ${node.id}`);
    const parentId = node.parentId ?? null;
    const parentMissing = parentId !== null && !this.byId.has(parentId) && !this.partialTree;
    if (parentId !== null && (parentMissing || parentId >= node.id)) {
      throw new InvalidTreeError(`node ${node.id} has no older parent ${parentId} in this tree`);
    }
    this.byId.set(node.id, freezeNode(node));
    const siblings = this.childList(parentId);
    siblings.push(node.id);
    if (siblings.length > 1 && siblings[siblings.length - 2]! > node.id) siblings.sort((a, b) => a - b);
    if (node.id >= this.next) this.next = node.id + 1;
    return this;
  }

  /** Like push, returning the new node's id. */
  pushNode(message: Message, usage: Usage | null = null): NodeId {
    const id = this.next++;
    const parentId = this.head;
    this.byId.set(id, freezeNode({ id, parentId, message, usage }));
    this.childList(parentId).push(id);
    if (parentId !== null) this.cursorMap.set(parentId, id);
    this.activePath.push(id);
    return id;
  }

  /**
   * Makes the path root -> id the active path and pins every cursor along it, so extend from any ancestor
   * comes back to this branch. `null` clears the path (cursors stay); the next push then starts a new root.
   * Throws UnknownNodeError for an unknown id, leaving the tree unchanged.
   */
  navigate(id: NodeId | null): this {
    if (id === null) {
      this.activePath = [];
      return this;
    }
    const path = this.pathTo(id);
    for (let i = 1; i < path.length; i++) this.cursorMap.set(path[i - 1]!, path[i]!);
    this.activePath = path;
    return this;
  }

  /**
   * Walks from the head down to a leaf: at each node follows its cursor, else its newest (highest-id) child.
   * An empty path stays empty.
   */
  extend(): this {
    let head = this.head;
    if (head === null) return this;
    for (;;) {
      const children = this.kids.get(head);
      if (!children || children.length === 0) return this;
      head = this.cursorMap.get(head) ?? children[children.length - 1]!;
      this.activePath.push(head);
    }
  }

  /** The current path and cursors, to restore later with restorePosition. */
  savePosition(): TreePosition {
    return { path: [...this.activePath], cursors: new Map(this.cursorMap) };
  }

  /** Puts back a position saved earlier; nodes added since stay in the tree. */
  restorePosition(position: TreePosition): this {
    this.activePath = [...position.path];
    this.cursorMap.clear();
    for (const [k, v] of position.cursors) this.cursorMap.set(k, v);
    return this;
  }

  // Convert

  toJSON(): TreeData {
    const cursors: Record<string, NodeId> = {};
    for (const [k, v] of this.cursorMap) cursors[String(k)] = v;
    return { nodes: this.allNodes(), path: [...this.activePath], cursors, nextId: this.next };
  }

  clone(): Tree {
    return Tree.hydrate({
      nodes: this.byId.values(),
      path: this.activePath,
      cursors: this.cursorMap,
      nextId: this.next,
      partial: this.partialTree,
    });
  }

  private childList(parentId: NodeId | null): NodeId[] {
    let list = this.kids.get(parentId);
    if (!list) {
      list = [];
      this.kids.set(parentId, list);
    }
    return list;
  }
}

function freezeNode(node: TreeNode): TreeNode {
  return Object.freeze({
    id: node.id,
    parentId: node.parentId ?? null,
    message: node.message,
    usage: node.usage ?? null,
  });
}

/**
 * The cursors of a tree given as nodes that say something (Tree.essentialCursors): those pointing at another child
 * than the newest of its parent.
 */
export function essentialCursorsOf(
  nodes: Iterable<Pick<TreeNode, 'id' | 'parentId'>>,
  cursors: Readonly<Record<string, NodeId>>,
): Record<string, NodeId> {
  const newest = new Map<NodeId, NodeId>();
  for (const node of nodes) {
    if (node.parentId !== null && node.id > (newest.get(node.parentId) ?? 0))
      newest.set(node.parentId, node.id);
  }
  const kept: Record<string, NodeId> = {};
  for (const [parent, child] of Object.entries(cursors)) {
    if (newest.get(Number(parent)) !== child) kept[parent] = child;
  }
  return kept;
}
