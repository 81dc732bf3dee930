import fc from 'fast-check';
import { canopyDocumentArb } from '@canopy/testing';
import { sumUsage } from '../usage';
import type { Message } from '../message';
import { ANTHROPIC_EXPORT_MAX_TOKENS, fromAnthropic, toAnthropic } from './anthropic';
import { fromCanopyDocument, toCanopyDocument, type CanopyDocument } from './canopy';
import { fromChatGpt } from './chatgpt';
import { FormatError } from './conversation';
import { toMarkdown } from './markdown';
import { fromOpenAi, toOpenAi } from './openai';

const NOW = 1_700_000_000_000;
const at = (m: Message): Message => ({ ...m, timestamp: NOW });

/** What an export of the document's import gives: the same document, usage summed over its nodes. */
function normalized(doc: CanopyDocument): CanopyDocument {
  return { ...doc, usage: sumUsage(doc.tree.nodes.map((n) => n.usage)) };
}

describe('the canopy format', () => {
  it('reads back exactly what it wrote, for any tree (property)', () => {
    fc.assert(
      fc.property(canopyDocumentArb(), (doc) => {
        const read = fromCanopyDocument(JSON.parse(JSON.stringify(doc)));
        const info = {
          ...read.session,
          model: read.session.model!,
          opts: {},
          tools: [],
          status: 'idle' as const,
        };
        const again = toCanopyDocument(
          {
            ...info,
            id: doc.session.id,
            userId: read.session.userId ?? null,
            createdAt: read.session.createdAt!,
            updatedAt: read.session.updatedAt!,
          },
          read.tree,
          read.summaries,
        );
        expect(again).toEqual(normalized(doc));
      }),
      { numRuns: 200 },
    );
  });

  it('names the field of what no store could hold', () => {
    const base = (tree: unknown) => ({ format: 'canopy', version: 1, session: {}, tree });
    const message = { role: 'user', content: [], timestamp: 0 };
    const cases: Array<[unknown, string]> = [
      [
        base({
          nodes: [
            { id: 1, parentId: null, message },
            { id: 1, parentId: null, message },
          ],
          path: [],
          cursors: {},
        }),
        'data.tree.nodes[1].id',
      ],
      [
        base({ nodes: [{ id: 2, parentId: 2, message }], path: [], cursors: {} }),
        'data.tree.nodes[0].parentId',
      ],
      [
        base({
          nodes: [
            { id: 1, parentId: null, message },
            { id: 2, parentId: null, message },
          ],
          path: [1, 2],
          cursors: {},
        }),
        'data.tree.path[1]',
      ],
      [
        base({ nodes: [{ id: 1, parentId: null, message }], path: [], cursors: { '1': 1 } }),
        'data.tree.cursors["1"]',
      ],
      [
        base({ nodes: [{ id: 3, parentId: null, message }], path: [], cursors: {}, nextId: 2 }),
        'data.tree.nextId',
      ],
      [
        base({
          nodes: [{ id: 1, parentId: null, message: { ...message, role: 'tool' } }],
          path: [],
          cursors: {},
        }),
        'data.tree.nodes[0].message.role',
      ],
      [{ ...base({ nodes: [], path: [], cursors: {} }), version: 2 }, 'data.version'],
      [
        {
          ...base({ nodes: [{ id: 1, parentId: null, message }], path: [1], cursors: {} }),
          summaries: [{ throughNodeId: 2, text: 'so far', tokens: 3, model: 'mock:echo' }],
        },
        'data.summaries[0].throughNodeId',
      ],
      [
        {
          ...base({ nodes: [{ id: 1, parentId: null, message }], path: [1], cursors: {} }),
          summaries: [
            { throughNodeId: 1, text: 'so far', tokens: 3, model: 'mock:echo' },
            { throughNodeId: 1, text: 'again', tokens: 3, model: 'mock:echo' },
          ],
        },
        'data.summaries[1].throughNodeId',
      ],
    ];
    for (const [doc, field] of cases) {
      let caught: unknown;
      try {
        fromCanopyDocument(doc);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(FormatError);
      expect((caught as FormatError).field).toBe(field);
    }
  });
});

describe('the anthropic format', () => {
  it('maps every block one to one and reads it back, for a conversation the API takes', () => {
    const messages: Message[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'attachment', mediaType: 'image/png', data: 'aGk=' },
          { type: 'attachment', mediaType: 'application/pdf', data: 'aGk=', name: 'spec' },
          { type: 'attachment', mediaType: 'text/plain', data: 'aMOpbGxv', name: 'notes' },
          { type: 'attachment', mediaType: 'image/*', url: 'https://example.com/cat.jpg' },
        ],
        timestamp: NOW,
      },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', text: 'hmm', signature: 'sig' },
          { type: 'text', text: 'calling' },
          { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } },
        ],
        timestamp: NOW,
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            toolUseId: 'toolu_1',
            content: [
              { type: 'text', text: 'one' },
              { type: 'attachment', mediaType: 'image/png', data: 'aGk=' },
            ],
            isError: true,
          },
          { type: 'text', text: 'and?' },
        ],
        timestamp: NOW,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'done' }], timestamp: NOW },
    ];
    const exported = toAnthropic('anthropic:claude-x', 'sys', messages, { maxTokens: 1000 });
    expect(exported).toMatchObject({ model: 'claude-x', max_tokens: 1000, system: 'sys' });
    expect(exported.messages[0]!.content.slice(2)).toEqual([
      {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: 'aGk=' },
        title: 'spec',
      },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'héllo' }, title: 'notes' },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    ]);
    const read = fromAnthropic(JSON.parse(JSON.stringify(exported)), NOW);
    expect(read.session).toMatchObject({ model: 'anthropic:claude-x', system: 'sys' });
    expect(read.tree.nodes.map((n) => n.message)).toEqual(messages);
    expect(read.tree.path).toEqual([1, 2, 3, 4]);
  });

  it('takes max_tokens from the session, else a default', () => {
    expect(toAnthropic('anthropic:claude-x', null, []).max_tokens).toBe(ANTHROPIC_EXPORT_MAX_TOKENS);
    expect(toAnthropic('anthropic:claude-x', null, [], { maxTokens: 0.5 }).max_tokens).toBe(
      ANTHROPIC_EXPORT_MAX_TOKENS,
    );
  });
});

describe('the openai format', () => {
  const conversation: Message[] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'attachment', mediaType: 'image/png', data: 'aGk=' },
      ],
      timestamp: 1,
    },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', text: 'hmm' },
        { type: 'text', text: 'calling' },
        { type: 'tool_use', id: 'c1', name: 'f', input: { a: 1 } },
        { type: 'tool_use', id: 'c2', name: 'g', input: {} },
      ],
      timestamp: 2,
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', toolUseId: 'c1', content: 'one', isError: false },
        { type: 'tool_result', toolUseId: 'c2', content: [{ type: 'text', text: 'two' }], isError: false },
      ],
      timestamp: 3,
    },
    { role: 'assistant', content: [{ type: 'text', text: 'done' }], timestamp: 4 },
  ];

  it('writes Chat Completions messages: system first, parts, tool_calls, one tool message per result', () => {
    expect(toOpenAi('openai:gpt-4o', 'sys', conversation)).toEqual({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'sys' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,aGk=' } },
          ],
        },
        {
          role: 'assistant',
          content: 'calling',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
            { id: 'c2', type: 'function', function: { name: 'g', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'one' },
        { role: 'tool', tool_call_id: 'c2', content: 'two' },
        { role: 'assistant', content: 'done' },
      ],
    });
  });

  it('reads them back (thinking has no place in the format; tool results become one user message)', () => {
    const read = fromOpenAi(toOpenAi('openai:gpt-4o', 'sys', conversation), NOW);
    expect(read.session).toMatchObject({ system: 'sys', model: 'openai:gpt-4o' });
    expect(read.tree.nodes.map((n) => n.message)).toEqual([
      at(conversation[0]!),
      at({ ...conversation[1]!, content: conversation[1]!.content.slice(1) }),
      at({
        ...conversation[2]!,
        content: [
          conversation[2]!.content[0]!,
          { type: 'tool_result', toolUseId: 'c2', content: 'two', isError: false },
        ],
      }),
      at(conversation[3]!),
    ]);
  });

  it('takes a bare array and legacy function calls; refuses arguments that are no JSON and unknown roles by field', () => {
    const read = fromOpenAi(
      [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, function_call: { name: 'f', arguments: '{"q":1}' } },
        { role: 'function', name: 'f', content: 'ok' },
      ],
      NOW,
    );
    const [, call, result] = read.tree.nodes.map((n) => n.message);
    expect(call!.content).toEqual([{ type: 'tool_use', id: 'call_2', name: 'f', input: { q: 1 } }]);
    expect(result!.content).toEqual([
      { type: 'tool_result', toolUseId: 'call_2', content: 'ok', isError: false },
    ]);
    expect(() =>
      fromOpenAi(
        [{ role: 'assistant', content: null, function_call: { name: 'f', arguments: 'not json' } }],
        NOW,
      ),
    ).toThrow(expect.objectContaining({ field: 'data[0].function_call.arguments' }));
    expect(() => fromOpenAi([{ role: 'user', content: 'x' }, { role: 'robot' }], NOW)).toThrow(
      expect.objectContaining({ field: 'data[1].role' }),
    );
  });
});

describe('a ChatGPT export conversation', () => {
  it('keeps the branches, hangs children of dropped nodes from their kept ancestor, and follows current_node', () => {
    const msg = (role: string, text: string, t: number, hidden = false) => ({
      author: { role },
      create_time: t,
      content: { content_type: 'text', parts: [text] },
      metadata: hidden ? { is_visually_hidden_from_conversation: true } : {},
    });
    const read = fromChatGpt(
      {
        title: 't',
        mapping: {
          r: { parent: null, children: ['h'], message: null },
          h: { parent: 'r', children: ['u'], message: msg('system', 'hidden', 1, true) },
          u: { parent: 'h', children: ['a', 'b'], message: msg('user', 'q', 2) },
          a: { parent: 'u', children: [], message: msg('assistant', 'first', 3) },
          tool: { parent: 'u', children: ['b'], message: msg('tool', 'output', 4) },
          b: { parent: 'tool', children: [], message: msg('assistant', 'second', 5) },
        },
        current_node: 'a',
      },
      NOW,
    );
    expect(read.tree.nodes.map((n) => [n.id, n.parentId, n.message.role, n.message.timestamp])).toEqual([
      [1, null, 'user', 2_000],
      [2, 1, 'assistant', 3_000],
      [3, 1, 'assistant', 5_000],
    ]);
    expect(read.tree.path).toEqual([1, 2]);
    expect(() => fromChatGpt({ mapping: { a: { parent: 'b' }, b: { parent: 'a' } } }, NOW)).toThrow(
      FormatError,
    );
  });
});

describe('markdown', () => {
  it('writes the active path for people, fencing what could break out', () => {
    const md = toMarkdown(
      { title: 'T', model: 'mock:echo', createdAt: '2026-01-01T00:00:00.000Z', system: 'S' },
      [
        { role: 'user', content: [{ type: 'text', text: 'hello' }], timestamp: 0 },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'x', name: 'f', input: { code: '```' } }],
          timestamp: 0,
        },
      ],
    );
    expect(md).toContain('# T');
    expect(md).toContain('## System\n\nS');
    expect(md).toContain('## User');
    expect(md).toContain('````json');
  });
});
