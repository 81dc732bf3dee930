// Every conversion is linear in its input. Two kinds of check, neither a "took < X ms": inputs of the shapes that
// hurt, large enough that a quadratic conversion takes minutes (the test's deadline fails it) where a linear one
// takes a fraction of a second — a ChatGPT mapping of 40,000 message-less nodes ending in one exchange, text of a
// million backticks, trees and arrays 100,000 long or deep (no stack overflow either); and growth: converting an
// input four times as large costs about four times the CPU (linear work gives ~4, quadratic ~16; the bound is 8),
// measured in the same run as the least CPU time (not wall time: the machine is shared) of a few runs of each
// size, both sizes past the point where the heap outgrows the CPU's caches. (Counting steps would need a counter in
// every loop of the conversions; the CPU time of the process is the count the machine keeps.)

import type { Message } from '../message';
import { fromAnthropic, toAnthropic } from './anthropic';
import { fromCanopyDocument, MAX_IMPORT_NODES } from './canopy';
import { fromChatGpt } from './chatgpt';
import { toMarkdown } from './markdown';
import { fromOpenAi, toOpenAi } from './openai';

const NOW = 1_700_000_000_000;

/**
 * The least CPU time of `runs` calls, in µs: the process's own time, which other processes on the machine do not
 * inflate as they do the wall clock's.
 */
function leastTime(fn: () => unknown, runs: number): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i++) {
    const start = process.cpuUsage();
    fn();
    const used = process.cpuUsage(start);
    best = Math.min(best, used.user + used.system);
  }
  return best;
}

/** How much more CPU converting an input of size 4n takes than one of size n (inputs built before timing). */
function growth<T>(make: (n: number) => T, convert: (input: T) => unknown, n: number): number {
  const small = make(n);
  const large = make(4 * n);
  convert(small); // warm up the code paths
  return leastTime(() => convert(large), 2) / leastTime(() => convert(small), 2);
}

/** Linear growth: below the bound (measured again once when a neighbour's load made the first reading high). */
function expectLinear<T>(make: (n: number) => T, convert: (input: T) => unknown, n: number): void {
  const first = growth(make, convert, n);
  expect(first < LINEAR ? first : growth(make, convert, n)).toBeLessThan(LINEAR);
}

const LINEAR = 8;
/** A deadline for the large inputs: seconds for linear work on a loaded machine, minutes for quadratic. */
const DEADLINE = 60_000;

const chatGptMessage = (role: string, text: string, t: number) => ({
  author: { role },
  create_time: t,
  content: { content_type: 'text', parts: [text] },
});

/** `n` message-less nodes in a chain, ending in one user / assistant exchange: the shape that stalled imports. */
function emptyChain(n: number) {
  const mapping: Record<string, unknown> = {};
  for (let i = 0; i < n; i++)
    mapping[`n${i}`] = { parent: i ? `n${i - 1}` : null, children: [`n${i + 1}`], message: null };
  mapping[`n${n}`] = { parent: `n${n - 1}`, children: ['a'], message: chatGptMessage('user', 'hi', 1) };
  mapping.a = { parent: `n${n}`, children: [], message: chatGptMessage('assistant', 'hello', 2) };
  return { mapping, current_node: 'a' };
}

/** A chain of `n` messages, user and assistant in turn. */
function messageChain(n: number) {
  const mapping: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    mapping[`m${i}`] = {
      parent: i ? `m${i - 1}` : null,
      children: i + 1 < n ? [`m${i + 1}`] : [],
      message: chatGptMessage(i % 2 ? 'assistant' : 'user', `message ${i}`, i),
    };
  }
  return { mapping };
}

/** One question with `n` answers (regenerations), newest last. */
function wide(n: number) {
  const mapping: Record<string, unknown> = {
    q: { parent: null, children: [], message: chatGptMessage('user', 'q', 0) },
  };
  for (let i = 0; i < n; i++)
    mapping[`a${i}`] = { parent: 'q', children: [], message: chatGptMessage('assistant', `a${i}`, n - i) };
  return { mapping };
}

/** `n` rounds: a prompt, an assistant call, its result, then runs of one role (all call ids alike). */
function openAiRounds(n: number) {
  const out: unknown[] = [{ role: 'system', content: 'sys' }];
  for (let i = 0; i < n; i++) {
    out.push(
      { role: 'user', content: `q${i}` },
      { role: 'user', content: [{ type: 'text', text: 'more' }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call', type: 'function', function: { name: 'f', arguments: `{"i":${i}}` } }],
      },
      { role: 'tool', tool_call_id: 'call', content: `r${i}` },
      { role: 'assistant', content: `a${i}` },
      { role: 'assistant', content: 'and more' },
    );
  }
  return out;
}

function anthropicRounds(n: number) {
  const out: unknown[] = [];
  for (let i = 0; i < n; i++) {
    out.push(
      { role: 'user', content: `q${i}` },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu', name: 'f', input: { i } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu', content: `r${i}` }] },
      { role: 'user', content: 'more' },
      { role: 'assistant', content: [{ type: 'text', text: `a${i}` }] },
    );
  }
  return out;
}

/** A path of `n` rounds as Canopy keeps them (repeated call ids, consecutive roles, an orphan result each). */
function canopyPath(n: number): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < n; i++) {
    out.push(
      { role: 'user', content: [{ type: 'text', text: `q${i}` }], timestamp: i },
      { role: 'user', content: [{ type: 'text', text: 'more' }], timestamp: i },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'x', name: 'f', input: { i } },
          { type: 'tool_use', id: 'unanswered', name: 'g', input: {} },
        ],
        timestamp: i,
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', toolUseId: 'x', content: 'r', isError: false },
          { type: 'tool_result', toolUseId: 'nobody', content: 'orphan', isError: false },
        ],
        timestamp: i,
      },
      { role: 'assistant', content: [{ type: 'text', text: `a${i}` }], timestamp: i },
    );
  }
  return out;
}

const session = { title: null, model: 'mock:echo', createdAt: '2026-01-01T00:00:00.000Z', system: null };

/** A tool result of `n` backticks (its fence must be longer than any run in it). */
const ticks = (n: number): Message[] => [
  {
    role: 'user',
    content: [{ type: 'tool_result', toolUseId: 'x', content: '`'.repeat(n), isError: false }],
    timestamp: 0,
  },
];

/** A canopy document of a chain of `n` nodes (or, `wide`, `n` children of one root). */
function canopyDocument(n: number, shape: 'deep' | 'wide' = 'deep') {
  const nodes = [];
  for (let i = 1; i <= n; i++) {
    nodes.push({
      id: i,
      parentId: i === 1 ? null : shape === 'deep' ? i - 1 : 1,
      message: {
        role: i % 2 ? 'user' : 'assistant',
        content: [{ type: 'text', text: `m${i}` }],
        timestamp: i,
      },
    });
  }
  const path = shape === 'deep' ? nodes.map((x) => x.id) : n > 1 ? [1, n] : [1];
  const cursors: Record<string, number> = {};
  for (let i = 1; i < path.length; i++) cursors[String(path[i - 1])] = path[i]!;
  return { format: 'canopy', version: 1, session: {}, tree: { nodes, path, cursors } };
}

describe('large inputs of the shapes that hurt', () => {
  it(
    'a ChatGPT mapping of 40,000 message-less nodes ending in one exchange',
    () => {
      const read = fromChatGpt(emptyChain(40_000), NOW);
      expect(read.tree.nodes.map((x) => x.message.role)).toEqual(['user', 'assistant']);
      expect(read.tree.path).toEqual([1, 2]);
    },
    DEADLINE,
  );

  it(
    'a ChatGPT mapping and a canopy document 100,000 deep, and the exports of that path',
    () => {
      const chat = fromChatGpt(messageChain(100_000), NOW);
      expect(chat.tree.path).toHaveLength(100_000);
      const doc = fromCanopyDocument(canopyDocument(MAX_IMPORT_NODES));
      expect(doc.tree.path).toHaveLength(MAX_IMPORT_NODES);
      const path = doc.tree.nodes.map((x) => x.message);
      expect(toAnthropic('anthropic:claude-x', null, path).messages).toHaveLength(MAX_IMPORT_NODES);
      expect(toOpenAi('openai:gpt-4o', null, path).messages).toHaveLength(MAX_IMPORT_NODES);
    },
    DEADLINE,
  );

  it(
    'a ChatGPT question with 100,000 answers',
    () => {
      const read = fromChatGpt(wide(100_000), NOW);
      expect(read.tree.nodes).toHaveLength(100_001);
      expect(read.tree.nodes[1]!.message.content).toEqual([{ type: 'text', text: 'a99999' }]);
    },
    DEADLINE,
  );

  it(
    'markdown of a million backticks',
    () => {
      const md = toMarkdown(session, ticks(1_000_000));
      expect(md).toContain('`'.repeat(1_000_001) + '\n');
      expect(toMarkdown(session, ticks(5))).toContain('``````\n`````\n``````');
    },
    DEADLINE,
  );

  it('content nested 100,000 deep: a tool_result in a tool_result is left out, a tool input refused', () => {
    let nested: unknown = 'bottom';
    for (let i = 0; i < 100_000; i++) nested = [{ type: 'tool_result', tool_use_id: 'a', content: nested }];
    const read = fromAnthropic(
      [
        { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: nested }] },
      ],
      NOW,
    );
    expect(read.tree.nodes[1]!.message.content).toEqual([
      { type: 'tool_result', toolUseId: 'a', content: [], isError: false },
    ]);
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(() =>
      fromAnthropic(
        [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: { deep } }] }],
        NOW,
      ),
    ).toThrow(expect.objectContaining({ field: 'data[0].content[0].input' }));
    const args = '{"deep":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}';
    expect(() =>
      fromOpenAi(
        [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: args } }],
          },
        ],
        NOW,
      ),
    ).toThrow(expect.objectContaining({ field: 'data[0].tool_calls[0].function.arguments' }));
  });
});

describe('conversions grow linearly with their input', () => {
  it(
    'ChatGPT mappings: message-less chains, wide trees',
    () => {
      expectLinear(emptyChain, (d) => fromChatGpt(d, NOW), 20_000);
      expectLinear(wide, (d) => fromChatGpt(d, NOW), 20_000);
    },
    DEADLINE * 2,
  );

  it(
    'OpenAI and Anthropic arrays with tool rounds and runs of one role, read and written',
    () => {
      expectLinear(openAiRounds, (d) => fromOpenAi(d, NOW), 4_000);
      expectLinear(anthropicRounds, (d) => fromAnthropic(d, NOW), 4_000);
      expectLinear(canopyPath, (p) => toOpenAi('openai:gpt-4o', null, p), 4_000);
      expectLinear(canopyPath, (p) => toAnthropic('anthropic:claude-x', null, p), 4_000);
      // Every round's call keeps its own id: `x`, `x_2`, ... (an id taken again costs no scan of the ones before).
      const ids = toAnthropic('anthropic:claude-x', null, canopyPath(3)).messages.flatMap((m) =>
        m.content.flatMap((b) => (b.type === 'tool_use' ? [b.id] : [])),
      );
      expect(ids).toEqual(['x', 'x_2', 'x_3']);
    },
    DEADLINE * 2,
  );

  it(
    'canopy documents and markdown',
    () => {
      expectLinear(
        (n) => canopyDocument(n),
        (d) => fromCanopyDocument(d),
        10_000,
      );
      expectLinear(ticks, (m) => toMarkdown(session, m), 250_000);
    },
    DEADLINE * 2,
  );
});
