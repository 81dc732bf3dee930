// Benchmarks of @canopy/core: the tree operations a session repeats (push, navigate + extend) and the UI-turn
// projection. Every case runs at two sizes ten times apart, so the ratio of their mean times shows whether the
// work grows linearly (~x10) or worse (~x100 would be quadratic). Fixtures are built outside the timed calls.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { Bench, type Task } from 'tinybench';

import { assistantMessage, toolResultMessage, userMessage, type Message } from '../libs/core/src/message';
import { Tree, type NodeId } from '../libs/core/src/tree';
import { allTurns, type Turn } from '../libs/core/src/turn';
import { makeUsage, type Usage } from '../libs/core/src/usage';
import { taskReport, type BenchReport } from './report';

const PUSH_SIZES = [10_000, 100_000] as const;
const DEPTHS = [1_000, 10_000] as const;
const TURN_SIZES = [1_000, 10_000] as const;

/** Fixed timestamps keep fixtures deterministic and out of Date.now. */
const T0 = Date.UTC(2025, 0, 1);

/** Results go here so no timed call is dead code to the optimiser. */
let sink: unknown;

export async function runCoreBench(): Promise<BenchReport[]> {
  return [...(await benchPush()), ...(await benchNavigateExtend()), ...(await benchTurns())];
}

// 1. push: a fresh tree built from N alternating user/assistant messages per timed call.

async function benchPush(): Promise<BenchReport[]> {
  const bench = newBench({ time: 1500, iterations: 10, warmupTime: 300, warmupIterations: 3 });
  const messages = alternatingMessages(PUSH_SIZES[PUSH_SIZES.length - 1]);
  for (const n of PUSH_SIZES) {
    bench.add(
      `push ${n}`,
      () => {
        const tree = new Tree();
        for (let i = 0; i < n; i++) tree.push(messages[i]!.message, messages[i]!.usage);
        sink = tree;
      },
      {
        beforeAll: collectGarbage,
        afterAll() {
          const tree = sink as Tree;
          check(tree.size === n && tree.path.length === n, `push ${n}: built a tree of ${tree.size} nodes`);
        },
      },
    );
  }
  await bench.run();
  return PUSH_SIZES.map((n) => taskReport(task(bench, `push ${n}`), 'push (build tree)', n, { count: n, name: 'push' }));
}

// 2. navigate + extend on a linear tree of depth D: navigate to a node, then extend back down to the leaf. The
// pair leaves the tree as it found it (full path, same cursors), so every call does the same O(D) work.

async function benchNavigateExtend(): Promise<BenchReport[]> {
  const bench = newBench({ time: 1000, iterations: 200, warmupTime: 250, warmupIterations: 50 });
  const targets = [
    { label: 'navigate(middle) + extend', pick: (path: readonly NodeId[]) => path[path.length >> 1]! },
    { label: 'navigate(near root) + extend', pick: (path: readonly NodeId[]) => path[1]! },
  ];
  for (const { label, pick } of targets) {
    for (const depth of DEPTHS) {
      const tree = linearTree(depth);
      const target = pick(tree.path);
      const leaf = tree.head;
      bench.add(
        `${label} ${depth}`,
        () => {
          tree.navigate(target).extend();
        },
        {
          beforeAll: collectGarbage,
          afterAll() {
            check(tree.head === leaf && tree.path.length === depth, `${label} ${depth}: did not end at the leaf`);
          },
        },
      );
    }
  }
  await bench.run();
  return targets.flatMap(({ label }) =>
    DEPTHS.map((depth) => taskReport(task(bench, `${label} ${depth}`), label, depth)),
  );
}

// 3. allTurns over an active path of N nodes: prompts and answers (with usage), every fifth turn a tool round
// (tool use, tool-result user message, final answer) so tool results fold into their turn.

async function benchTurns(): Promise<BenchReport[]> {
  const bench = newBench({ time: 1000, iterations: 50, warmupTime: 250, warmupIterations: 10 });
  for (const n of TURN_SIZES) {
    const { tree, turns } = conversationTree(n);
    bench.add(
      `allTurns ${n}`,
      () => {
        sink = allTurns(tree);
      },
      {
        beforeAll: collectGarbage,
        afterAll() {
          const got = (sink as Turn[]).length;
          check(got === turns, `allTurns ${n}: ${got} turns, expected ${turns}`);
        },
      },
    );
  }
  await bench.run();
  return TURN_SIZES.map((n) =>
    taskReport(task(bench, `allTurns ${n}`), 'allTurns (UI projection)', n, { count: n, name: 'node' }),
  );
}

// Fixtures

interface Entry {
  message: Message;
  usage: Usage | null;
}

function usageFor(i: number): Usage {
  return makeUsage({ inputTokens: 1000 + i, outputTokens: 200, inputCost: 0.003, outputCost: 0.0015 });
}

/** N messages alternating user prompt / assistant answer, usage on the answers. */
function alternatingMessages(n: number): Entry[] {
  const entries: Entry[] = [];
  for (let i = 0; i < n; i++) {
    entries.push(
      i % 2 === 0
        ? { message: userMessage(`question ${i}`, T0 + i), usage: null }
        : { message: assistantMessage(`answer ${i}`, T0 + i), usage: usageFor(i) },
    );
  }
  return entries;
}

/** A single branch of the given depth; its active path runs root to leaf. */
function linearTree(depth: number): Tree {
  const tree = new Tree();
  for (const { message, usage } of alternatingMessages(depth)) tree.push(message, usage);
  return tree;
}

/** A conversation of exactly n nodes on one path, with tool rounds; also returns how many turns it holds. */
function conversationTree(n: number): { tree: Tree; turns: number } {
  const tree = new Tree();
  let turns = 0;
  for (let t = 0; tree.size < n; t++) {
    const ts = T0 + t * 1000;
    const round: Entry[] = [{ message: userMessage(`prompt ${t}`, ts), usage: null }];
    if (t % 5 === 4) {
      const toolUseId = `toolu_${t}`;
      round.push(
        {
          message: assistantMessage(
            [
              { type: 'thinking', text: `thinking about ${t}` },
              { type: 'tool_use', id: toolUseId, name: 'search', input: { query: `q${t}` } },
            ],
            ts + 1,
          ),
          usage: usageFor(t),
        },
        {
          message: toolResultMessage([{ type: 'tool_result', toolUseId, content: `result ${t}`, isError: false }], ts + 2),
          usage: null,
        },
        { message: assistantMessage(`answer ${t} from the tool`, ts + 3), usage: usageFor(t + 1) },
      );
    } else {
      round.push({ message: assistantMessage(`answer ${t}`, ts + 1), usage: usageFor(t) });
    }
    for (const { message, usage } of round) {
      if (tree.size === n) break;
      tree.push(message, usage);
    }
    turns++;
  }
  return { tree, turns };
}

// Helpers

function newBench(options: { time: number; iterations: number; warmupTime: number; warmupIterations: number }) {
  return new Bench({ ...options, throws: true });
}

function task(bench: Bench, name: string): Task {
  const found = bench.getTask(name);
  if (!found) throw new Error(`no bench task "${name}"`);
  return found;
}

/**
 * Starts each task phase with a clean heap, so garbage left by the previous task (100k-node trees) does not
 * land in the next one's figures. `gc` is global only under --expose-gc; setting the flag at run time and
 * reading `gc` from a fresh context gets it without the flag (a no-op if this V8 refuses).
 */
const gc: (() => void) | undefined = (() => {
  const global = globalThis as { gc?: () => void };
  if (typeof global.gc === 'function') return global.gc;
  try {
    setFlagsFromString('--expose-gc');
    const fn: unknown = runInNewContext('gc');
    return typeof fn === 'function' ? (fn as () => void) : undefined;
  } catch {
    return undefined;
  }
})();

function collectGarbage(): void {
  sink = undefined;
  gc?.();
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new Error(`bench fixture check failed: ${message}`);
}
