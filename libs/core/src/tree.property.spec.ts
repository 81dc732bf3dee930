import fc from 'fast-check';

import { assistantMessage, userMessage } from './message';
import { InvalidTreeError, Tree, UnknownNodeError, type NodeId, type TreeData, type TreeNode } from './tree';
import { makeUsage, sumUsage, type Usage } from './usage';

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

const opsArb = fc.array(opArb, { maxLength: 60, size: 'max' });

function cursorEntries(tree: Tree): Array<[NodeId, NodeId]> {
  return [...tree.cursors.entries()].sort((a, b) => a[0] - b[0]);
}

function snapshot(tree: Tree): { json: TreeData; nextId: number } {
  return { json: tree.toJSON(), nextId: tree.nextId };
}

/** What toJSON -> hydrate must reproduce. */
function position(tree: Tree): {
  path: NodeId[];
  cursors: Array<[NodeId, NodeId]>;
  size: number;
  nextId: number;
} {
  return { path: [...tree.path], cursors: cursorEntries(tree), size: tree.size, nextId: tree.nextId };
}

/**
 * Invariants that hold after every operation. Checks are gathered into few `expect` calls: the property runs
 * thousands of steps and per-element expects would dominate its runtime.
 */
function checkInvariants(tree: Tree, pushed: number, usages: Array<Usage | null>): void {
  const path = tree.path;
  const nodes = tree.allNodes();

  // The path is a parent chain from a root to the head, and iteration walks it.
  expect(path.map((id) => tree.getNode(id)?.parentId)).toEqual(
    [null, ...path.slice(0, -1)].slice(0, path.length),
  );
  expect(tree.head).toBe(path.length === 0 ? null : path[path.length - 1]);
  if (tree.head !== null) expect(tree.pathTo(tree.head)).toEqual(path);
  expect([...tree].map((n) => n.id)).toEqual(path);
  expect(tree.messages().every((m, i) => m === tree.getMessage(path[i]!))).toBe(true);

  // Every cursor points at a child of its key.
  const badCursors = [...tree.cursors].filter(
    ([parent, child]) => tree.getNode(child)?.parentId !== parent || !tree.children(parent).includes(child),
  );
  expect(badCursors).toEqual([]);

  // Ids are unique and exactly 1..size; size counts every push.
  expect(tree.size).toBe(pushed);
  expect(nodes.map((n) => n.id)).toEqual(Array.from({ length: pushed }, (_, i) => i + 1));
  expect(tree.nextId).toBe(pushed + 1);

  // Children and roots are exactly the nodes' parent pointers, in ascending order.
  const expectedKids = new Map<NodeId | null, NodeId[]>();
  for (const n of nodes) expectedKids.set(n.parentId, [...(expectedKids.get(n.parentId) ?? []), n.id]);
  expect(nodes.map((n) => tree.children(n.id))).toEqual(nodes.map((n) => expectedKids.get(n.id) ?? []));
  expect(tree.roots()).toEqual(expectedKids.get(null) ?? []);

  // Usage covers every node, abandoned branches included.
  expect(tree.usage()).toEqual(sumUsage(usages));

  // toJSON -> hydrate reproduces path, cursors, size and the next id.
  expect(position(Tree.hydrate(tree.toJSON()))).toEqual(position(tree));
}

function run(ops: readonly Op[]): void {
  const tree = new Tree();
  let pushed = 0;
  const usages: Array<Usage | null> = [];
  checkInvariants(tree, pushed, usages);

  for (const op of ops) {
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
        expect(id).toBe(pushed);
        expect(tree.getNode(id)).toEqual({ id, parentId: parent, message, usage: op.usage });
        expect(tree.path).toEqual([...beforePath, id]);
        if (parent === null) expect(tree.roots()).toContain(id);
        else expect(tree.cursors.get(parent)).toBe(id);
        break;
      }
      case 'navigate': {
        if (op.pick === null || tree.size === 0) {
          tree.navigate(null);
          expect(tree.path).toEqual([]);
          expect(cursorEntries(tree)).toEqual(beforeCursors);
        } else {
          const target = (op.pick % tree.size) + 1;
          tree.navigate(target);
          expect(tree.head).toBe(target);
          expect(tree.path).toEqual(tree.pathTo(target));
          // Every cursor along the new path is pinned to it.
          expect(tree.path.slice(0, -1).map((id) => tree.cursors.get(id))).toEqual(tree.path.slice(1));
        }
        break;
      }
      case 'navigateUnknown': {
        const before = snapshot(tree);
        expect(() => tree.navigate(tree.size + 1 + op.beyond)).toThrow(UnknownNodeError);
        expect(snapshot(tree)).toEqual(before);
        break;
      }
      case 'extend': {
        tree.extend();
        const path = tree.path;
        expect(path.slice(0, beforePath.length)).toEqual(beforePath);
        if (beforePath.length === 0) expect(path).toEqual([]);
        else expect(tree.children(tree.head!)).toEqual([]);
        // Each step took the cursor's child, else the newest child.
        const steps = path.slice(beforePath.length);
        const parents = path.slice(beforePath.length - 1, -1);
        expect(steps).toEqual(
          parents.map((parent) => tree.cursors.get(parent) ?? Math.max(...tree.children(parent))),
        );
        expect(cursorEntries(tree)).toEqual(beforeCursors);
        break;
      }
    }
    checkInvariants(tree, pushed, usages);
  }

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
    const treeArb = fc
      .array(fc.option(fc.nat(), { freq: 4 }), { minLength: 1, maxLength: 40 })
      .map((raw) => raw.map((p, i) => (p === null || i === 0 ? null : (p % i) + 1)));
    fc.assert(
      fc.property(treeArb, fc.nat(), (parents, pick) => {
        const nodes: TreeNode[] = parents.map((parentId, i) => ({
          id: i + 1,
          parentId,
          message: userMessage(`m${i + 1}`, i),
          usage: null,
        }));
        const start = (pick % nodes.length) + 1;
        const path = Tree.hydrate({ nodes }).pathTo(start);
        const tree = Tree.hydrate({ nodes: [...nodes].reverse(), path });
        expect(tree.path).toEqual(path);
        expect(tree.size).toBe(nodes.length);
        expect(tree.nextId).toBe(nodes.length + 1);
        tree.extend();
        for (let i = path.length; i < tree.path.length; i++) {
          expect(tree.path[i]).toBe(Math.max(...tree.children(tree.path[i - 1]!)));
        }
        expect(tree.children(tree.head!)).toEqual([]);

        // Pointing any node at itself or a younger (or missing) parent is rejected.
        const victim = pick % nodes.length;
        const broken = nodes.map((n, i) => (i === victim ? { ...n, parentId: n.id + (pick % 2) } : n));
        expect(() => Tree.hydrate({ nodes: broken })).toThrow(InvalidTreeError);
      }),
      { numRuns: 300 },
    );
  });

  it('clone then the same operations gives the same tree as the original', () => {
    fc.assert(
      fc.property(opsArb, opsArb, (prefix, suffix) => {
        const tree = new Tree();
        const apply = (t: Tree, ops: readonly Op[]): void => {
          for (const op of ops) {
            if (op.kind === 'push') t.push(userMessage('m', 0), op.usage);
            else if (op.kind === 'navigate')
              t.navigate(op.pick === null || t.size === 0 ? null : (op.pick % t.size) + 1);
            else if (op.kind === 'extend') t.extend();
          }
        };
        apply(tree, prefix);
        const before = snapshot(tree);
        const copy = tree.clone();
        apply(copy, suffix);
        expect(snapshot(tree)).toEqual(before);
        apply(tree, suffix);
        expect(snapshot(copy)).toEqual(snapshot(tree));
      }),
      { numRuns: 200 },
    );
  });

  it('savePosition/restorePosition undoes any navigation, keeping nodes pushed since', () => {
    fc.assert(
      fc.property(opsArb, opsArb, (prefix, between) => {
        const tree = new Tree();
        const apply = (ops: readonly Op[]): void => {
          for (const op of ops) {
            if (op.kind === 'push') tree.push(userMessage('m', 0));
            else if (op.kind === 'navigate')
              tree.navigate(op.pick === null || tree.size === 0 ? null : (op.pick % tree.size) + 1);
            else if (op.kind === 'extend') tree.extend();
          }
        };
        apply(prefix);
        const path = [...tree.path];
        const cursors = cursorEntries(tree);
        const saved = tree.savePosition();
        apply(between);
        const size = tree.size;
        tree.restorePosition(saved);
        expect(tree.path).toEqual(path);
        expect(cursorEntries(tree)).toEqual(cursors);
        expect(tree.size).toBe(size);
      }),
      { numRuns: 200 },
    );
  });
});
