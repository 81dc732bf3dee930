// Benchmarks of @canopy/core: the tree operations a session repeats (push, navigate + extend), the UI-turn
// projection and the conversation formats' imports and exports (over the shapes that would make them superlinear).
// Every case runs at two sizes ten times apart, so the ratio of their mean times shows whether the work grows
// linearly (~x10) or worse (~x100 would be quadratic). Fixtures are built outside the timed calls.

import { assistantMessage, toolResultMessage, userMessage, type Message } from '../libs/core/src/message';
import { Tree, type NodeId } from '../libs/core/src/tree';
import { allTurns, type Turn } from '../libs/core/src/turn';
import { makeUsage, type Usage } from '../libs/core/src/usage';
import { fromAnthropic, toAnthropic } from '../libs/core/src/formats/anthropic';
import { fromCanopyDocument } from '../libs/core/src/formats/canopy';
import { fromChatGpt } from '../libs/core/src/formats/chatgpt';
import { toMarkdown } from '../libs/core/src/formats/markdown';
import { fromOpenAi, toOpenAi } from '../libs/core/src/formats/openai';
import {
  anthropicRounds,
  canopyDocument,
  canopyPath,
  emptyChain,
  markdownSession,
  openAiRounds,
  ticks,
  wide,
} from '../libs/testing/src/format-shapes';
import { runCases, type BenchCase, type BenchReport } from './report';

const PUSH_SIZES = [10_000, 100_000] as const;
const DEPTHS = [1_000, 10_000] as const;
const TURN_SIZES = [1_000, 10_000] as const;

/** Fixed timestamps keep fixtures deterministic and out of Date.now. */
const T0 = Date.UTC(2025, 0, 1);

export async function runCoreBench(): Promise<BenchReport[]> {
  return [
    ...(await benchPush()),
    ...(await benchNavigateExtend()),
    ...(await benchTurns()),
    ...(await benchFormats()),
  ];
}

// 1. push: a fresh tree built from N alternating user/assistant messages per timed call.

function benchPush(): Promise<BenchReport[]> {
  const messages = alternatingMessages(Math.max(...PUSH_SIZES));
  const cases = PUSH_SIZES.map((n): BenchCase<Tree> => ({
    name: `push ${n}`,
    case: 'push (build tree)',
    size: n,
    unit: { count: n, name: 'push' },
    fn: () => {
      const tree = new Tree();
      for (let i = 0; i < n; i++) tree.push(messages[i]!.message, messages[i]!.usage);
      return tree;
    },
    check: (tree) => {
      check(tree.size === n && tree.path.length === n, `push ${n}: built a tree of ${tree.size} nodes`);
    },
  }));
  return runCases(cases, { time: 500, iterations: 5, warmupTime: 150, warmupIterations: 2 });
}

// 2. navigate + extend on a linear tree of depth D: navigate to a node, then extend back down to the leaf. The
// pair leaves the tree as it found it (full path, same cursors), so every call does the same O(D) work.

function benchNavigateExtend(): Promise<BenchReport[]> {
  const targets = [
    { label: 'navigate(middle) + extend', pick: (path: readonly NodeId[]) => path[path.length >> 1]! },
    { label: 'navigate(near root) + extend', pick: (path: readonly NodeId[]) => path[1]! },
  ];
  const cases = targets.flatMap(({ label, pick }) =>
    DEPTHS.map((depth): BenchCase => {
      const tree = linearTree(depth);
      const target = pick(tree.path);
      const leaf = tree.head;
      return {
        name: `${label} ${depth}`,
        case: label,
        size: depth,
        fn: () => {
          tree.navigate(target).extend();
        },
        check: () => {
          const ok = tree.head === leaf && tree.path.length === depth;
          check(ok, `${label} ${depth}: did not end back at the leaf`);
        },
      };
    }),
  );
  return runCases(cases, { time: 400, iterations: 100, warmupTime: 100, warmupIterations: 20 });
}

// 3. allTurns over an active path of N nodes: prompts and answers (with usage), every fifth turn a tool round
// (tool use, tool-result user message, final answer) so tool results fold into their turn.

function benchTurns(): Promise<BenchReport[]> {
  const cases = TURN_SIZES.map((n): BenchCase<Turn[]> => {
    const { tree, turns } = conversationTree(n);
    return {
      name: `allTurns ${n}`,
      case: 'allTurns (UI projection)',
      size: n,
      unit: { count: n, name: 'node' },
      fn: () => allTurns(tree),
      check: (result) => {
        check(result.length === turns, `allTurns ${n}: ${result.length} turns, expected ${turns}`);
      },
    };
  });
  return runCases(cases, { time: 500, iterations: 20, warmupTime: 150, warmupIterations: 5 });
}

// 4. The conversation formats: each import and export over the input shapes that would make it superlinear if
// anything could (libs/testing's format shapes), at two sizes ten times apart. A conversion that scanned its input
// again per node (the ChatGPT mapping once did) shows a ratio near x100.

const NOW = T0;

function benchFormats(): Promise<BenchReport[]> {
  const shapes: Array<{
    case: string;
    sizes: [number, number];
    make: (n: number) => unknown;
    convert: (input: never) => unknown;
  }> = [
    {
      case: 'ChatGPT import, message-less chain',
      sizes: [10_000, 100_000],
      make: emptyChain,
      convert: (d: never) => fromChatGpt(d, NOW),
    },
    {
      case: 'ChatGPT import, one question and n answers',
      sizes: [4_000, 40_000],
      make: wide,
      convert: (d: never) => fromChatGpt(d, NOW),
    },
    {
      case: 'OpenAI import, tool rounds',
      sizes: [400, 4_000],
      make: openAiRounds,
      convert: (d: never) => fromOpenAi(d, NOW),
    },
    {
      case: 'Anthropic import, tool rounds',
      sizes: [400, 4_000],
      make: anthropicRounds,
      convert: (d: never) => fromAnthropic(d, NOW),
    },
    {
      case: 'OpenAI export of a path',
      sizes: [400, 4_000],
      make: canopyPath,
      convert: (p: never) => toOpenAi('openai:gpt-4o', null, p),
    },
    {
      case: 'Anthropic export of a path',
      sizes: [400, 4_000],
      make: canopyPath,
      convert: (p: never) => toAnthropic('anthropic:claude-x', null, p),
    },
    {
      case: 'canopy document import, deep',
      sizes: [4_000, 40_000],
      make: (n) => canopyDocument(n),
      convert: (d: never) => fromCanopyDocument(d),
    },
    {
      case: 'canopy document import, wide',
      sizes: [4_000, 40_000],
      make: (n) => canopyDocument(n, 'wide'),
      convert: (d: never) => fromCanopyDocument(d),
    },
    {
      case: 'markdown export, a run of backticks',
      sizes: [100_000, 1_000_000],
      make: ticks,
      convert: (m: never) => toMarkdown(markdownSession, m),
    },
  ];
  const cases = shapes.flatMap((shape) =>
    shape.sizes.map((n): BenchCase<unknown> => {
      const input = shape.make(n) as never;
      return {
        name: `${shape.case} ${n}`,
        case: shape.case,
        size: n,
        unit: { count: n, name: 'item' },
        fn: () => shape.convert(input),
        check: (result) => check(result !== undefined, `${shape.case} ${n}: no result`),
      };
    }),
  );
  return runCases(cases, { time: 300, iterations: 5, warmupTime: 100, warmupIterations: 2 });
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
      const toolUse = assistantMessage(
        [
          { type: 'thinking', text: `thinking about ${t}` },
          { type: 'tool_use', id: toolUseId, name: 'search', input: { query: `q${t}` } },
        ],
        ts + 1,
      );
      const result = { type: 'tool_result', toolUseId, content: `result ${t}`, isError: false } as const;
      round.push(
        { message: toolUse, usage: usageFor(t) },
        { message: toolResultMessage([result], ts + 2), usage: null },
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

function check(ok: boolean, message: string): void {
  if (!ok) throw new Error(`bench fixture check failed: ${message}`);
}
