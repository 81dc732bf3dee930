import fc from 'fast-check';

import { assistantMessage, userMessage } from './message';
import { InvalidTreeError, Tree, UnknownNodeError, type NodeId, type TreeData, type TreeNode } from './tree';
import { makeUsage, sumUsage, USAGE_FIELDS, type Usage } from './usage';

type Op =
  | { kind: 'push'; usage: Usage | null }
  | { kind: 'navigate'; pick: number | null }
  | { kind: 'navigateUnknown'; beyond: number }
  | { kind: 'extend' };

const usageArb: fc.Arbitrary<Usage | null> = fc.option(
  fc
    .record({ inputTokens: fc.nat(1_000), outputTokens: fc.nat(1_000), cacheReadTokens: fc.nat(1_000) })
    .map((parts) => makeUsage(parts)),
);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: usageArb.map((usage): Op => ({ kind: 'push', usage })) },
  // `pick` selects an existing id once the tree size is known (biased to the oldest nodes, where branches
  // pile up); null clears the path.
  {
    weight: 3,
    arbitrary: fc
      .option(fc.oneof(fc.nat(3), fc.nat()), { freq: 5 })
      .map((pick): Op => ({ kind: 'navigate', pick })),
  },
  { weight: 1, arbitrary: fc.nat(10).map((beyond): Op => ({ kind: 'navigateUnknown', beyond })) },
  { weight: 2, arbitrary: fc.constant<Op>({ kind: 'extend' }) },
);

// size 'max': sequences up to the full 60 operations, deep enough for branches under branches.
const opsArb = fc.array(opArb, { maxLength: 60, size: 'max' });

/** The id an op picks among the existing nodes, or null. */
function target(tree: Tree, pick: number | null): NodeId | null {
  return pick === null || tree.size === 0 ? null : (pick % tree.size) + 1;
}

/** Applies an op with no checks (for the clone and position properties). */
function apply(tree: Tree, ops: readonly Op[]): void {
  for (const op of ops) {
    if (op.kind === 'push') tree.push(userMessage('m', 0), op.usage);
    else if (op.kind === 'navigate') tree.navigate(target(tree, op.pick));
    else if (op.kind === 'extend') tree.extend();
  }
}

function cursorEntries(tree: Tree): Array<[NodeId, NodeId]> {
  return [...tree.cursors.entries()].sort((a, b) => a[0] - b[0]);
}

/** Path, cursors, size and next id: what a round trip through toJSON and hydrate must keep. */
function position(tree: Tree): {
  path: NodeId[];
  cursors: Array<[NodeId, NodeId]>;
  size: number;
  nextId: number;
} {
  return { path: [...tree.path], cursors: cursorEntries(tree), size: tree.size, nextId: tree.nextId };
}

/**
 * The broken expectations of one step, asserted with a single `expect` per step: a run has thousands of steps
 * and per-element expects would dominate the file's runtime. Values compared are plain JSON data.
 */
class Violations {
  readonly found: string[] = [];

  check(ok: boolean, what: string): void {
    if (!ok) this.found.push(what);
  }

  same(actual: unknown, expected: unknown, what: string): void {
    const a = JSON.stringify(actual);
    const e = JSON.stringify(expected);
    if (a !== e) this.found.push(`${what}: got ${a}, expected ${e}`);
  }
}

/** Invariants that hold after every operation. */
function checkInvariants(v: Violations, tree: Tree, pushed: number, usages: Array<Usage | null>): void {
  const path = tree.path;
  const nodes = tree.allNodes();

  // The path is a parent chain from a root to the head, and iteration walks it.
  v.same(
    path.map((id) => tree.getNode(id)?.parentId ?? (tree.has(id) ? null : 'missing')),
    [null, ...path].slice(0, path.length),
    'path parents',
  );
  v.same(tree.head, path.length === 0 ? null : path[path.length - 1], 'head');
  if (tree.head !== null) v.same(tree.pathTo(tree.head), path, 'pathTo(head)');
  v.same(
    [...tree].map((n) => n.id),
    path,
    'iteration',
  );
  v.check(
    tree.messages().every((m, i) => m === tree.getMessage(path[i]!)),
    'messages follow the path',
  );

  // Every cursor points at a child of its key.
  for (const [parent, child] of tree.cursors) {
    v.check(tree.getNode(child)?.parentId === parent, `cursor ${parent} -> ${child} is not a child`);
  }

  // Ids are unique and exactly 1..size; size counts every push.
  v.same(tree.size, pushed, 'size');
  v.same(
    nodes.map((n) => n.id),
    Array.from({ length: pushed }, (_, i) => i + 1),
    'ids',
  );
  v.same(tree.nextId, pushed + 1, 'nextId');

  // Children and roots are exactly the parent pointers, ascending.
  const kids = new Map<NodeId | null, NodeId[]>();
  for (const n of nodes) kids.set(n.parentId, [...(kids.get(n.parentId) ?? []), n.id]);
  v.same(
    nodes.map((n) => tree.children(n.id)),
    nodes.map((n) => kids.get(n.id) ?? []),
    'children',
  );
  v.same(tree.roots(), kids.get(null) ?? [], 'roots');

  // Usage covers every node, abandoned branches included.
  const usage = tree.usage();
  const expectedUsage = sumUsage(usages);
  v.same(
    USAGE_FIELDS.map((k) => usage[k]),
    USAGE_FIELDS.map((k) => expectedUsage[k]),
    'usage',
  );

  // toJSON -> hydrate reproduces path, cursors, size and the next id.
  v.same(position(Tree.hydrate(tree.toJSON())), position(tree), 'toJSON -> hydrate');
}

function run(ops: readonly Op[]): void {
  const tree = new Tree();
  let pushed = 0;
  const usages: Array<Usage | null> = [];
  const initial = new Violations();
  checkInvariants(initial, tree, pushed, usages);
  expect(initial.found).toEqual([]);

  ops.forEach((op, step) => {
    const v = new Violations();
    const beforePath = [...tree.path];
    const beforeCursors = cursorEntries(tree);
    switch (op.kind) {
      case 'push': {
        const parent = tree.head;
        const message =
          pushed % 2 === 0 ? userMessage(`u${pushed}`, pushed) : assistantMessage(`a${pushed}`, pushed);
        const id = tree.pushNode(message, op.usage);
        pushed++;
        usages.push(op.usage);
        const node = tree.getNode(id);
        v.same(id, pushed, 'new id');
        v.check(node?.message === message && node.usage === op.usage, 'node keeps message and usage');
        v.same(node?.parentId, parent, 'new node parent');
        v.same(tree.path, [...beforePath, id], 'path after push');
        if (parent !== null) v.same(tree.cursors.get(parent), id, 'cursor of the parent');
        break;
      }
      case 'navigate': {
        const to = target(tree, op.pick);
        tree.navigate(to);
        if (to === null) {
          v.same(tree.path, [], 'path after navigate(null)');
          v.same(cursorEntries(tree), beforeCursors, 'cursors after navigate(null)');
        } else {
          v.same(tree.head, to, 'head after navigate');
          v.same(tree.path, tree.pathTo(to), 'path after navigate');
          // Every cursor along the new path is pinned to it.
          v.same(
            tree.path.slice(0, -1).map((id) => tree.cursors.get(id)),
            tree.path.slice(1),
            'cursors along the path',
          );
        }
        break;
      }
      case 'navigateUnknown': {
        const before = JSON.stringify([tree.toJSON(), tree.nextId]);
        let error: unknown;
        try {
          tree.navigate(tree.size + 1 + op.beyond);
        } catch (err) {
          error = err;
        }
        v.check(error instanceof UnknownNodeError, 'navigate to an unknown id throws UnknownNodeError');
        v.same([tree.toJSON(), tree.nextId], JSON.parse(before), 'tree after a failed navigate');
        break;
      }
      case 'extend': {
        tree.extend();
        const path = tree.path;
        v.same(path.slice(0, beforePath.length), beforePath, 'extend keeps the path prefix');
        if (beforePath.length === 0) v.same(path, [], 'extend on an empty path');
        else v.same(tree.children(tree.head!), [], 'extend ends at a leaf');
        // Each step took the cursor's child, else the newest child.
        v.same(
          path.slice(beforePath.length),
          path
            .slice(beforePath.length - 1, -1)
            .map((parent) => tree.cursors.get(parent) ?? Math.max(...tree.children(parent))),
          'extend follows cursors, else the newest child',
        );
        v.same(cursorEntries(tree), beforeCursors, 'cursors after extend');
        break;
      }
    }
    checkInvariants(v, tree, pushed, usages);
    expect(v.found.map((f) => `step ${step} (${op.kind}): ${f}`)).toEqual([]);
  });

  // The persisted form survives JSON text too, nodes included.
  const copy = Tree.hydrate(JSON.parse(JSON.stringify(tree)) as TreeData);
  expect(position(copy)).toEqual(position(tree));
  expect(copy.allNodes()).toEqual(tree.allNodes());
}

describe('Tree properties', () => {
  it('keeps its invariants under any sequence of push, navigate and extend', () => {
    fc.assert(fc.property(opsArb, run), { numRuns: 300 });
  });

  it('hydrates any valid tree, and extend without cursors follows the newest child to a leaf', () => {
    // parents[i] is the parent of node i + 1: null (a root) or any older node.
    const parentsArb = fc
      .array(fc.option(fc.nat(), { freq: 4 }), { minLength: 1, maxLength: 40 })
      .map((raw) => raw.map((p, i) => (p === null || i === 0 ? null : (p % i) + 1)));
    fc.assert(
      fc.property(parentsArb, fc.nat(), (parents, pick) => {
        const nodes: TreeNode[] = parents.map((parentId, i) => ({
          id: i + 1,
          parentId,
          message: userMessage(`m${i + 1}`, i),
          usage: null,
        }));
        const path = Tree.hydrate({ nodes }).pathTo((pick % nodes.length) + 1);
        const tree = Tree.hydrate({ nodes: [...nodes].reverse(), path });
        expect(position(tree)).toEqual({ path, cursors: [], size: nodes.length, nextId: nodes.length + 1 });

        tree.extend();
        const steps = tree.path.slice(path.length);
        const parentsOfSteps = tree.path.slice(path.length - 1, -1);
        expect(steps).toEqual(parentsOfSteps.map((p) => Math.max(...tree.children(p))));
        expect(tree.children(tree.head!)).toEqual([]);

        // Pointing any node at itself or at a younger (or missing) parent is rejected.
        const victim = pick % nodes.length;
        const broken = nodes.map((n, i) => (i === victim ? { ...n, parentId: n.id + (pick % 2) } : n));
        expect(() => Tree.hydrate({ nodes: broken })).toThrow(InvalidTreeError);
      }),
      { numRuns: 300 },
    );
  });

  it('a clone evolves independently and like the original under the same operations', () => {
    fc.assert(
      fc.property(opsArb, opsArb, (prefix, suffix) => {
        const tree = new Tree();
        apply(tree, prefix);
        const before = tree.toJSON();
        const copy = tree.clone();
        apply(copy, suffix);
        expect(tree.toJSON()).toEqual(before);
        apply(tree, suffix);
        expect(position(copy)).toEqual(position(tree));
        expect(copy.toJSON()).toEqual(tree.toJSON());
      }),
      { numRuns: 200 },
    );
  });

  it('restorePosition undoes any navigation, keeping nodes pushed since', () => {
    fc.assert(
      fc.property(opsArb, opsArb, (prefix, between) => {
        const tree = new Tree();
        apply(tree, prefix);
        const path = [...tree.path];
        const cursors = cursorEntries(tree);
        const saved = tree.savePosition();
        apply(tree, between);
        const size = tree.size;
        tree.restorePosition(saved);
        expect({ path: tree.path, cursors: cursorEntries(tree), size: tree.size }).toEqual({
          path,
          cursors,
          size,
        });
      }),
      { numRuns: 200 },
    );
  });
});
