// Conversation inputs of the shapes that make a format conversion superlinear if anything can: ChatGPT mappings of
// message-less chains and wide fan-outs, provider message arrays with tool rounds and runs of one role, Canopy
// paths with repeated call ids and orphan results, text of backticks, canopy documents deep or wide. The formats'
// large-input tests build their inputs here.

import type { Message } from '@canopy/core';

export const chatGptMessage = (role: string, text: string, t: number) => ({
  author: { role },
  create_time: t,
  content: { content_type: 'text', parts: [text] },
});

/** `n` message-less nodes in a chain, ending in one user / assistant exchange: the shape that stalled imports. */
export function emptyChain(n: number) {
  const mapping: Record<string, unknown> = {};
  for (let i = 0; i < n; i++)
    mapping[`n${i}`] = { parent: i ? `n${i - 1}` : null, children: [`n${i + 1}`], message: null };
  mapping[`n${n}`] = { parent: `n${n - 1}`, children: ['a'], message: chatGptMessage('user', 'hi', 1) };
  mapping.a = { parent: `n${n}`, children: [], message: chatGptMessage('assistant', 'hello', 2) };
  return { mapping, current_node: 'a' };
}

/** A chain of `n` messages, user and assistant in turn. */
export function messageChain(n: number) {
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
export function wide(n: number) {
  const mapping: Record<string, unknown> = {
    q: { parent: null, children: [], message: chatGptMessage('user', 'q', 0) },
  };
  for (let i = 0; i < n; i++)
    mapping[`a${i}`] = { parent: 'q', children: [], message: chatGptMessage('assistant', `a${i}`, n - i) };
  return { mapping };
}

/** `n` rounds: a prompt, an assistant call, its result, then runs of one role (all call ids alike). */
export function openAiRounds(n: number) {
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

export function anthropicRounds(n: number) {
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
export function canopyPath(n: number): Message[] {
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

export const markdownSession = {
  title: null,
  model: 'mock:echo',
  createdAt: '2026-01-01T00:00:00.000Z',
  system: null,
};

/** A tool result of `n` backticks (its fence must be longer than any run in it). */
export const ticks = (n: number): Message[] => [
  {
    role: 'user',
    content: [{ type: 'tool_result', toolUseId: 'x', content: '`'.repeat(n), isError: false }],
    timestamp: 0,
  },
];

/** A canopy document of a chain of `n` nodes (or, `wide`, `n` children of one root). */
export function canopyDocument(n: number, shape: 'deep' | 'wide' = 'deep') {
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
