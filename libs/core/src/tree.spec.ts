import { assistantMessage, userMessage, type Message } from './message';
import {
  essentialCursorsOf,
  InvalidTreeError,
  Tree,
  UnknownNodeError,
  type TreeData,
  type TreeInit,
  type TreeNode,
} from './tree';
import { emptyUsage, makeUsage } from './usage';

const user = (text: string): Message => userMessage(text, 1_000);
const assistant = (text: string): Message => assistantMessage(text, 2_000);

/** A node as the store would persist it. */
function node(id: number, parentId: number | null, message: Message = user(`m${id}`)): TreeNode {
  return { id, parentId, message, usage: null };
}

/** user, assistant, user, assistant: a linear tree of two turns. */
function linearTree(): Tree {
  return new Tree().push(user('u1')).push(assistant('a2')).push(user('u3')).push(assistant('a4'));
}

function cursorsOf(tree: Tree): Array<[number, number]> {
  return [...tree.cursors.entries()].sort((a, b) => a[0] - b[0]);
}

describe('Tree', () => {
  it('starts empty', () => {
    const tree = new Tree();
    expect(tree.size).toBe(0);
    expect(tree.head).toBeNull();
    expect(tree.path).toEqual([]);
    expect(tree.messages()).toEqual([]);
    expect(tree.roots()).toEqual([]);
    expect(tree.allNodes()).toEqual([]);
    expect([...tree]).toEqual([]);
    expect(tree.cursors.size).toBe(0);
    expect(tree.nextId).toBe(1);
    expect(tree.usage()).toEqual(emptyUsage());
  });

  describe('a worked example: branch, edit, navigate', () => {
    it('pushes, branches, switches branches and extends to a leaf', () => {
      const u1 = user('u1');
      const a2 = assistant('a2');
      const u3 = user('u3');
      const a4 = assistant('a4');
      const tree = new Tree().push(u1).push(a2).push(u3).push(a4);

      // Tree.messages(tree) #=> [user, assistant, user, assistant]; Tree.size(tree) #=> 4
      expect(tree.messages()).toEqual([u1, a2, u3, a4]);
      expect(tree.messages().map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
      expect(tree.size).toBe(4);
      expect(tree.path).toEqual([1, 2, 3, 4]);

      // navigate(3) then push: a branch; size 5, children(3) == [4, 5]
      const a5 = assistant('a5');
      tree.navigate(3);
      expect(tree.path).toEqual([1, 2, 3]);
      tree.push(a5);
      expect(tree.size).toBe(5);
      expect(tree.children(3)).toEqual([4, 5]);
      expect(tree.path).toEqual([1, 2, 3, 5]);
      expect(tree.messages()).toEqual([u1, a2, u3, a5]);

      // navigate(4): the original branch is live
      tree.navigate(4);
      expect(tree.path).toEqual([1, 2, 3, 4]);
      expect(tree.head).toBe(4);
      expect(tree.cursors.get(3)).toBe(4);

      // navigate(5): switch to the new branch
      tree.navigate(5);
      expect(tree.path).toEqual([1, 2, 3, 5]);
      expect(tree.head).toBe(5);
      expect(tree.cursors.get(3)).toBe(5);

      // navigate(2) lands on an interior node; extend walks to a leaf following the cursors
      tree.navigate(2);
      expect(tree.path).toEqual([1, 2]);
      tree.extend();
      expect(tree.path).toEqual([1, 2, 3, 5]);
      expect(tree.children(tree.head!)).toEqual([]);
      expect(tree.size).toBe(5);
    });
  });

  describe('push and pushNode', () => {
    it('assigns sequential ids from 1, chains from the head and returns the tree', () => {
      const tree = new Tree();
      expect(tree.push(user('a'))).toBe(tree);
      tree.push(assistant('b'));
      expect(tree.getNode(1)).toEqual({ id: 1, parentId: null, message: user('a'), usage: null });
      expect(tree.getNode(2)).toEqual({ id: 2, parentId: 1, message: assistant('b'), usage: null });
      expect(tree.head).toBe(2);
      expect(tree.nextId).toBe(3);
    });

    it('pushNode returns the new id and stores the usage', () => {
      const tree = new Tree();
      const usage = makeUsage({ inputTokens: 3, outputTokens: 4 });
      expect(tree.pushNode(user('a'))).toBe(1);
      expect(tree.pushNode(assistant('b'), usage)).toBe(2);
      expect(tree.getNode(2)?.usage).toEqual(usage);
      expect(tree.getNode(1)?.usage).toBeNull();
    });

    it('points the parent cursor at the new node, and sets no cursor for a root', () => {
      const tree = new Tree().push(user('a'));
      expect(tree.cursors.size).toBe(0);
      tree.push(assistant('b'));
      expect(cursorsOf(tree)).toEqual([[1, 2]]);
      tree.navigate(1).push(assistant('c'));
      expect(cursorsOf(tree)).toEqual([[1, 3]]);
    });

    it('stores frozen nodes', () => {
      const tree = new Tree().push(user('a'));
      expect(Object.isFrozen(tree.getNode(1))).toBe(true);
    });
  });

  describe('lookups', () => {
    it('has, getNode and getMessage know only existing ids', () => {
      const tree = linearTree();
      expect(tree.has(1)).toBe(true);
      expect(tree.has(4)).toBe(true);
      expect(tree.has(0)).toBe(false);
      expect(tree.has(5)).toBe(false);
      expect(tree.getNode(3)?.message).toEqual(user('u3'));
      expect(tree.getMessage(4)).toEqual(assistant('a4'));
      expect(tree.getNode(9)).toBeUndefined();
      expect(tree.getMessage(9)).toBeUndefined();
    });

    it('allNodes lists every node in ascending id order, abandoned branches included', () => {
      const tree = linearTree().navigate(2).push(user('u5')).navigate(null).push(user('u6'));
      expect(tree.allNodes().map((n) => n.id)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(tree.allNodes().map((n) => n.parentId)).toEqual([null, 1, 2, 3, 2, null]);
    });

    it('messages follow the active path only', () => {
      const tree = linearTree().navigate(2).push(user('u5'));
      expect(tree.messages()).toEqual([user('u1'), assistant('a2'), user('u5')]);
    });
  });

  describe('pathTo', () => {
    it('walks parent pointers to the root, root first, without moving the path', () => {
      const tree = linearTree().navigate(2).push(user('u5'));
      expect(tree.pathTo(4)).toEqual([1, 2, 3, 4]);
      expect(tree.pathTo(5)).toEqual([1, 2, 5]);
      expect(tree.pathTo(1)).toEqual([1]);
      expect(tree.path).toEqual([1, 2, 5]);
    });

    it('throws UnknownNodeError for an unknown id', () => {
      const tree = linearTree();
      expect(() => tree.pathTo(42)).toThrow(UnknownNodeError);
      try {
        tree.pathTo(42);
        throw new Error('pathTo did not throw');
      } catch (err) {
        expect(err).toBeInstanceOf(Error);
        expect(err).toMatchObject({ name: 'UnknownNodeError', code: 'not_found', nodeId: 42 });
        expect((err as Error).message).toBe('node 42 does not exist in this tree');
      }
    });
  });

  describe('navigate', () => {
    it('makes root -> id the active path and returns the tree', () => {
      const tree = linearTree();
      expect(tree.navigate(3)).toBe(tree);
      expect(tree.path).toEqual([1, 2, 3]);
      expect(tree.head).toBe(3);
      expect(tree.size).toBe(4);
    });

    it('pins every cursor along the path so extend from an ancestor comes back', () => {
      // 1 -> 2 -> 3 -> 4 and a second branch 1 -> 2 -> 5 -> 6
      const tree = linearTree().navigate(2).push(user('u5')).push(assistant('a6'));
      expect(cursorsOf(tree)).toEqual([
        [1, 2],
        [2, 5],
        [3, 4],
        [5, 6],
      ]);
      tree.navigate(4);
      expect(cursorsOf(tree)).toEqual([
        [1, 2],
        [2, 3],
        [3, 4],
        [5, 6],
      ]);
      tree.navigate(1).extend();
      expect(tree.path).toEqual([1, 2, 3, 4]);
      tree.navigate(6).navigate(1).extend();
      expect(tree.path).toEqual([1, 2, 5, 6]);
    });

    it("pins the root's cursor too", () => {
      const tree = linearTree().navigate(1).push(assistant('a5'));
      expect(tree.cursors.get(1)).toBe(5);
      tree.navigate(3);
      expect(cursorsOf(tree)).toEqual([
        [1, 2],
        [2, 3],
        [3, 4],
      ]);
      tree.navigate(1).extend();
      expect(tree.path).toEqual([1, 2, 3, 4]);
    });

    it('throws UnknownNodeError for an unknown id and leaves the tree unchanged', () => {
      const tree = linearTree().navigate(2);
      const before = tree.toJSON();
      expect(() => tree.navigate(99)).toThrow(UnknownNodeError);
      expect(() => tree.navigate(0)).toThrow(UnknownNodeError);
      expect(tree.toJSON()).toEqual(before);
      expect(tree.path).toEqual([1, 2]);
      expect(tree.nextId).toBe(5);
    });

    it('navigate(null) clears the path, keeps the cursors, and the next push starts a new root', () => {
      const tree = linearTree();
      const cursors = cursorsOf(tree);
      expect(tree.navigate(null)).toBe(tree);
      expect(tree.path).toEqual([]);
      expect(tree.head).toBeNull();
      expect(tree.messages()).toEqual([]);
      expect(cursorsOf(tree)).toEqual(cursors);
      expect(tree.size).toBe(4);

      tree.push(user('u5'));
      expect(tree.getNode(5)?.parentId).toBeNull();
      expect(tree.path).toEqual([5]);
      expect(tree.roots()).toEqual([1, 5]);
      expect(tree.messages()).toEqual([user('u5')]);
      expect(cursorsOf(tree)).toEqual(cursors);
    });
  });

  describe('children, siblings and roots', () => {
    /** Roots 1, 5, 8; 1 has children 2, 3, 7; 3 has child 4; 5 has child 6. */
    function bushy(): Tree {
      const tree = new Tree();
      tree.push(user('1')).push(assistant('2'));
      tree.navigate(1).push(assistant('3')).push(user('4'));
      tree.navigate(null).push(user('5')).push(assistant('6'));
      tree.navigate(1).push(assistant('7'));
      tree.navigate(null).push(user('8'));
      return tree;
    }

    it('children are ascending ids; [] for a leaf or an unknown id', () => {
      const tree = bushy();
      expect(tree.children(1)).toEqual([2, 3, 7]);
      expect(tree.children(3)).toEqual([4]);
      expect(tree.children(5)).toEqual([6]);
      expect(tree.children(2)).toEqual([]);
      expect(tree.children(100)).toEqual([]);
    });

    it('children are ascending even when hydrated from unordered nodes', () => {
      const tree = Tree.hydrate({ nodes: [node(9, 1), node(1, null), node(4, 1), node(6, 1)] });
      expect(tree.children(1)).toEqual([4, 6, 9]);
    });

    it('children returns a copy', () => {
      const tree = bushy();
      tree.children(1).push(99);
      expect(tree.children(1)).toEqual([2, 3, 7]);
    });

    it('siblings are the other children of the parent', () => {
      const tree = bushy();
      expect(tree.siblings(3)).toEqual([2, 7]);
      expect(tree.siblings(2)).toEqual([3, 7]);
      expect(tree.siblings(4)).toEqual([]);
      expect(tree.siblings(100)).toEqual([]);
    });

    it('siblings of a root are the other roots', () => {
      const tree = bushy();
      expect(tree.siblings(1)).toEqual([5, 8]);
      expect(tree.siblings(5)).toEqual([1, 8]);
      expect(tree.siblings(8)).toEqual([1, 5]);
    });

    it('roots are ascending', () => {
      expect(bushy().roots()).toEqual([1, 5, 8]);
      expect(bushy().roots()).not.toBe(bushy().roots());
    });
  });

  describe('extend', () => {
    it('follows the cursor rather than the newest child', () => {
      // 1 -> 2 -> 3, 2 -> 4: navigating to 3 pins cursor 2 -> 3 although 4 is newer
      const tree = new Tree().push(user('1')).push(assistant('2')).push(user('3'));
      tree.navigate(2).push(user('4'));
      tree.navigate(3).navigate(1);
      expect(tree.extend()).toBe(tree);
      expect(tree.path).toEqual([1, 2, 3]);
    });

    it('falls back to the highest-id child where no cursor is set', () => {
      // 1 -> 2, 1 -> 3 -> 4, 3 -> 5, hydrated without cursors
      const tree = Tree.hydrate({
        nodes: [node(1, null), node(2, 1), node(3, 1), node(4, 3), node(5, 3)],
        path: [1],
      });
      tree.extend();
      expect(tree.path).toEqual([1, 3, 5]);
    });

    it('mixes cursors and the fallback level by level', () => {
      const tree = Tree.hydrate({
        nodes: [node(1, null), node(2, 1), node(3, 1), node(4, 2), node(5, 2)],
        path: [1],
        cursors: { 1: 2 },
      });
      tree.extend();
      expect(tree.path).toEqual([1, 2, 5]);
    });

    it('does nothing on an empty path', () => {
      const tree = linearTree().navigate(null);
      tree.extend();
      expect(tree.path).toEqual([]);
      expect(tree.head).toBeNull();
      expect(new Tree().extend().path).toEqual([]);
    });

    it('does nothing at a leaf', () => {
      const tree = linearTree();
      tree.extend();
      expect(tree.path).toEqual([1, 2, 3, 4]);
    });

    it('does not change cursors or size', () => {
      const tree = linearTree().navigate(2).push(user('u5')).navigate(1);
      const cursors = cursorsOf(tree);
      tree.extend();
      expect(tree.path).toEqual([1, 2, 5]);
      expect(cursorsOf(tree)).toEqual(cursors);
      expect(tree.size).toBe(5);
    });
  });

  describe('usage', () => {
    it('sums every node, abandoned branches included; nodes without usage count zero', () => {
      const tree = new Tree();
      tree.push(user('u1'));
      tree.push(assistant('a2'), makeUsage({ inputTokens: 10, outputTokens: 5, inputCost: 0.5 }));
      tree
        .navigate(1)
        .push(assistant('a3'), makeUsage({ inputTokens: 1, outputTokens: 2, cacheReadTokens: 3 }));
      tree
        .navigate(null)
        .push(user('u4'))
        .push(assistant('a5'), makeUsage({ outputTokens: 100 }));
      tree.navigate(2);

      expect(tree.usage()).toEqual(
        makeUsage({ inputTokens: 11, outputTokens: 107, cacheReadTokens: 3, inputCost: 0.5 }),
      );
      expect(tree.usage().totalTokens).toBe(121);
    });
  });

  describe('iteration', () => {
    it('yields the nodes of the active path root first', () => {
      const tree = linearTree().navigate(2).push(user('u5'));
      expect([...tree].map((n) => n.id)).toEqual([1, 2, 5]);
      expect([...tree]).toEqual([tree.getNode(1), tree.getNode(2), tree.getNode(5)]);
      const seen: number[] = [];
      for (const n of tree) seen.push(n.id);
      expect(seen).toEqual([1, 2, 5]);
      expect(Array.from(tree)).toHaveLength(tree.path.length);
    });
  });

  describe('hydrate', () => {
    it('rebuilds nodes, path and cursors', () => {
      const tree = Tree.hydrate({
        nodes: [node(1, null), node(2, 1), node(3, 2), node(4, 2)],
        path: [1, 2, 4],
        cursors: { 1: 2, 2: 4 },
      });
      expect(tree.size).toBe(4);
      expect(tree.path).toEqual([1, 2, 4]);
      expect(tree.head).toBe(4);
      expect(cursorsOf(tree)).toEqual([
        [1, 2],
        [2, 4],
      ]);
      expect(tree.children(2)).toEqual([3, 4]);
      expect(tree.nextId).toBe(5);
    });

    it('accepts cursors as a Map', () => {
      const tree = Tree.hydrate({
        nodes: [node(1, null), node(2, 1), node(3, 1)],
        cursors: new Map([[1, 2]]),
      });
      expect(cursorsOf(tree)).toEqual([[1, 2]]);
    });

    it('with no input gives an empty tree', () => {
      const tree = Tree.hydrate();
      expect(tree.size).toBe(0);
      expect(tree.path).toEqual([]);
      expect(tree.nextId).toBe(1);
      expect(tree.push(user('a')).head).toBe(1);
    });

    it('continues after the highest id with sparse ids, so a push never collides', () => {
      const tree = Tree.hydrate({
        nodes: [node(1, null), node(2, 1), node(7, 2)],
        path: [1, 2, 7],
        cursors: { 1: 2, 2: 7 },
      });
      expect(tree.nextId).toBe(8);
      const id = tree.pushNode(assistant('a8'));
      expect(id).toBe(8);
      expect(tree.getNode(8)?.parentId).toBe(7);
      expect(tree.getNode(7)?.message).toEqual(user('m7'));
      expect(tree.size).toBe(4);
      tree.navigate(1).push(assistant('a9'));
      expect(tree.allNodes().map((n) => n.id)).toEqual([1, 2, 7, 8, 9]);
    });

    it('honours nextId above the highest id', () => {
      const tree = Tree.hydrate({ nodes: [node(1, null), node(2, 1)], path: [1, 2], nextId: 20 });
      expect(tree.nextId).toBe(20);
      expect(tree.pushNode(user('x'))).toBe(20);
      expect(tree.pushNode(user('y'))).toBe(21);
    });

    it('ignores nextId at or below the highest id', () => {
      const tree = Tree.hydrate({ nodes: [node(1, null), node(5, 1)], path: [1, 5], nextId: 3 });
      expect(tree.nextId).toBe(6);
      expect(tree.pushNode(user('x'))).toBe(6);
    });

    it('copies the input path', () => {
      const path = [1, 2];
      const tree = Tree.hydrate({ nodes: [node(1, null), node(2, 1)], path });
      path.push(99);
      expect(tree.path).toEqual([1, 2]);
      tree.navigate(1);
      expect(path).toEqual([1, 2, 99]);
    });

    function expectInvalid(init: TreeInit, message: string): void {
      expect(() => Tree.hydrate(init)).toThrow(InvalidTreeError);
      expect(() => Tree.hydrate(init)).toThrow(message);
      try {
        Tree.hydrate(init);
      } catch (err) {
        expect(err).toMatchObject({ name: 'InvalidTreeError', code: 'invalid_tree' });
      }
    }

    it('rejects a dangling parent', () => {
      expectInvalid({ nodes: [node(1, null), node(3, 2)] }, 'node 3 has unknown parent 2');
    });

    it('rejects a parent that is not older than its child', () => {
      expectInvalid(
        { nodes: [node(1, null), node(2, 3), node(3, 1)] },
        'node 2 is not younger than its parent 3',
      );
      expectInvalid({ nodes: [node(4, 4)] }, 'node 4 is not younger than its parent 4');
    });

    it('rejects duplicate ids', () => {
      expectInvalid({ nodes: [node(1, null), node(2, 1), node(2, 1)] }, 'duplicate node id 2');
    });

    it('rejects ids that are not positive integers', () => {
      expectInvalid({ nodes: [node(0, null)] }, 'invalid node id 0');
      expectInvalid({ nodes: [node(1.5, null)] }, 'invalid node id 1.5');
      expectInvalid({ nodes: [node(-1, null)] }, 'invalid node id -1');
    });

    it('rejects a path that is not a parent chain from a root', () => {
      const nodes = [node(1, null), node(2, 1), node(3, 2), node(4, 1)];
      expectInvalid({ nodes, path: [1, 3] }, 'path is not a parent chain at node 3');
      expectInvalid({ nodes, path: [2, 3] }, 'path is not a parent chain at node 2');
      expectInvalid({ nodes, path: [1, 2, 4] }, 'path is not a parent chain at node 4');
      expectInvalid({ nodes, path: [1, 1] }, 'path is not a parent chain at node 1');
      expectInvalid({ nodes, path: [1, 9] }, 'path holds unknown node 9');
    });

    it('rejects a cursor that does not point at a child of its key', () => {
      const nodes = [node(1, null), node(2, 1), node(3, 2), node(4, null)];
      expectInvalid({ nodes, cursors: { 1: 3 } }, 'cursor 1 -> 3 does not point at a child');
      expectInvalid({ nodes, cursors: { 1: 4 } }, 'cursor 1 -> 4 does not point at a child');
      expectInvalid({ nodes, cursors: { 1: 9 } }, 'cursor 1 -> 9 does not point at a child');
      expectInvalid({ nodes, cursors: { 9: 2 } }, 'cursor 9 -> 2 does not point at a child');
      expectInvalid({ nodes, cursors: { 2: 2 } }, 'cursor 2 -> 2 does not point at a child');
      expectInvalid({ nodes, cursors: new Map([[2, 1]]) }, 'cursor 2 -> 1 does not point at a child');
    });
  });

  describe('toJSON', () => {
    it('gives nodes in id order, the path and string-keyed cursors', () => {
      const tree = linearTree()
        .navigate(2)
        .push(user('u5'), makeUsage({ inputTokens: 1 }));
      const json = tree.toJSON();
      expect(json).toEqual({
        nodes: tree.allNodes(),
        path: [1, 2, 5],
        cursors: { '1': 2, '2': 5, '3': 4 },
        nextId: 6,
      });
      expect(Object.keys(json).sort()).toEqual(['cursors', 'nextId', 'nodes', 'path']);
      json.path.push(99);
      expect(tree.path).toEqual([1, 2, 5]);
    });

    it('keeps a reserved nextId through toJSON and hydrate', () => {
      const tree = Tree.hydrate({ nodes: [node(1, null)], path: [1], nextId: 20 });
      expect(Tree.hydrate(tree.toJSON()).nextId).toBe(20);
    });

    it('round-trips through JSON text and hydrate', () => {
      const tree = linearTree()
        .navigate(2)
        .push(user('u5'), makeUsage({ inputTokens: 7, outputCost: 0.25 }));
      tree.navigate(null).push(user('u6')).navigate(3);
      const copy = Tree.hydrate(JSON.parse(JSON.stringify(tree)) as TreeData);
      expect(copy.allNodes()).toEqual(tree.allNodes());
      expect(copy.path).toEqual(tree.path);
      expect(cursorsOf(copy)).toEqual(cursorsOf(tree));
      expect(copy.size).toBe(tree.size);
      expect(copy.nextId).toBe(tree.nextId);
      expect(copy.usage()).toEqual(tree.usage());
      expect(copy.roots()).toEqual([1, 6]);
      expect(copy.children(2)).toEqual([3, 5]);
      expect(copy.toJSON()).toEqual(tree.toJSON());
    });
  });

  describe('clone', () => {
    it('copies nodes, path, cursors and nextId', () => {
      const tree = Tree.hydrate({
        nodes: [node(1, null), node(2, 1)],
        path: [1, 2],
        cursors: { 1: 2 },
        nextId: 10,
      });
      const copy = tree.clone();
      expect(copy).not.toBe(tree);
      expect(copy.toJSON()).toEqual(tree.toJSON());
      expect(copy.nextId).toBe(10);
    });

    it('is independent of the original both ways', () => {
      const tree = linearTree();
      const copy = tree.clone();

      copy.navigate(2).push(user('c5'));
      expect(tree.size).toBe(4);
      expect(tree.path).toEqual([1, 2, 3, 4]);
      expect(tree.children(2)).toEqual([3]);
      expect(tree.cursors.get(2)).toBe(3);
      expect(tree.nextId).toBe(5);

      tree.navigate(null).push(user('t5'));
      expect(copy.roots()).toEqual([1]);
      expect(copy.path).toEqual([1, 2, 5]);
      expect(copy.getMessage(5)).toEqual(user('c5'));
      expect(tree.getMessage(5)).toEqual(user('t5'));
    });
  });

  describe('savePosition and restorePosition', () => {
    it('undoes a navigation and its cursors, keeping nodes added since', () => {
      const tree = linearTree();
      const saved = tree.savePosition();
      const cursors = cursorsOf(tree);

      tree.navigate(2).push(user('u5'));
      expect(tree.path).toEqual([1, 2, 5]);
      expect(tree.cursors.get(2)).toBe(5);

      expect(tree.restorePosition(saved)).toBe(tree);
      expect(tree.path).toEqual([1, 2, 3, 4]);
      expect(cursorsOf(tree)).toEqual(cursors);
      expect(tree.size).toBe(5);
      expect(tree.children(2)).toEqual([3, 5]);
      expect(tree.nextId).toBe(6);
    });

    it('saves a snapshot that later changes do not touch', () => {
      const tree = linearTree();
      const saved = tree.savePosition();
      tree.push(user('u5'));
      tree.navigate(1);
      expect(saved.path).toEqual([1, 2, 3, 4]);
      expect([...saved.cursors.entries()]).toEqual([
        [1, 2],
        [2, 3],
        [3, 4],
      ]);
    });

    it('can be restored more than once', () => {
      const tree = linearTree();
      const saved = tree.savePosition();
      tree.navigate(1).push(assistant('a5'));
      tree.restorePosition(saved);
      tree.push(assistant('a6'));
      expect(tree.path).toEqual([1, 2, 3, 4, 6]);
      tree.restorePosition(saved);
      expect(tree.path).toEqual([1, 2, 3, 4]);
      expect(tree.cursors.has(4)).toBe(false);
      expect(saved.path).toEqual([1, 2, 3, 4]);
    });
  });

  describe('errors', () => {
    it('are Errors with names and codes', () => {
      const unknown = new UnknownNodeError(3);
      expect(unknown).toBeInstanceOf(Error);
      expect(unknown.name).toBe('UnknownNodeError');
      expect(unknown.code).toBe('not_found');
      const invalid = new InvalidTreeError('bad');
      expect(invalid).toBeInstanceOf(Error);
      expect(invalid.message).toBe('bad');
      expect(invalid.code).toBe('invalid_tree');
    });
  });
});

describe('Tree.addNode', () => {
  const msg = (role: 'user' | 'assistant'): Message => ({ role, content: [], timestamp: 0 });

  it('adds committed nodes with their ids without moving the path', () => {
    const tree = new Tree().push(msg('user')).push(msg('assistant'));
    tree.addNode({ id: 7, parentId: 1, message: msg('assistant'), usage: null });
    expect(tree.size).toBe(3);
    expect(tree.path).toEqual([1, 2]);
    expect(tree.children(1)).toEqual([2, 7]);
    expect(tree.nextId).toBe(8);
    tree.addNode({ id: 5, parentId: 1, message: msg('assistant'), usage: null });
    expect(tree.children(1)).toEqual([2, 5, 7]);
    expect(tree.push(msg('user')).head).toBe(8);
  });

  it('adds a new root', () => {
    const tree = new Tree().push(msg('user'));
    tree.addNode({ id: 3, parentId: null, message: msg('user'), usage: null });
    expect(tree.roots()).toEqual([1, 3]);
  });

  it('rejects a duplicate id, a missing or younger parent, and a bad id', () => {
    const tree = new Tree().push(msg('user')).push(msg('assistant'));
    expect(() => tree.addNode({ id: 2, parentId: 1, message: msg('user'), usage: null })).toThrow(
      InvalidTreeError,
    );
    expect(() => tree.addNode({ id: 9, parentId: 4, message: msg('user'), usage: null })).toThrow(
      InvalidTreeError,
    );
    expect(() => tree.addNode({ id: 1.5, parentId: null, message: msg('user'), usage: null })).toThrow(
      InvalidTreeError,
    );
    tree.addNode({ id: 9, parentId: 2, message: msg('user'), usage: null });
    expect(() => tree.addNode({ id: 8, parentId: 9, message: msg('user'), usage: null })).toThrow(
      InvalidTreeError,
    );
    expect(tree.size).toBe(3);
  });
});

describe('essential cursors', () => {
  it('keeps only the cursors that point at another child than the newest: none for a conversation that only grew', () => {
    const tree = new Tree();
    for (let i = 0; i < 6; i++) tree.push(userMessage(`m${i}`));
    expect(tree.cursors.size).toBe(5);
    expect(tree.essentialCursors()).toEqual({});
    // A regeneration of node 3's reply: 7 is 3's newest child, its cursor says nothing.
    tree.navigate(3).push(userMessage('again'));
    expect(tree.essentialCursors()).toEqual({});
    // Back on the first version: 3 -> 4 is a choice, kept; extend after hydration follows it.
    tree.navigate(6);
    const kept = tree.essentialCursors();
    expect(kept).toEqual({ '3': 4 });
    const again = Tree.hydrate({ nodes: tree.toJSON().nodes, path: [1], cursors: kept });
    expect(again.extend().path).toEqual(tree.path);
    expect(essentialCursorsOf(tree.toJSON().nodes, tree.toJSON().cursors)).toEqual(kept);
  });
});
