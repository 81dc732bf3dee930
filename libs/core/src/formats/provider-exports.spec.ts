// The openai and anthropic exports are requests the providers take: for generated trees (tool rounds answered or
// not, stray results, consecutive messages of a role, thinking, attachments of every kind) every export validates
// against zod schemas of the OpenAI Chat Completions and Anthropic Messages requests, and re-imports to the same
// export; for generated provider input, import either refuses naming the message or its exports validate. Then
// the cases as a hostile tenant would send them: merged turns, orphan results, arguments that are no JSON.

import fc from 'fast-check';
import {
  anthropicMessagesArb,
  anthropicMessagesRequestSchema,
  canopyDocumentArb,
  openAiChatRequestSchema,
  openAiMessagesArb,
  pathArb,
} from '@canopy/testing';
import type { Message } from '../message';
import { fromAnthropic, toAnthropic } from './anthropic';
import { fromChatGpt } from './chatgpt';
import { FormatError, type Conversation } from './conversation';
import { fromOpenAi, toOpenAi } from './openai';

const NOW = 1_700_000_000_000;

/** The active path's messages of a conversation. */
const pathOf = (c: Conversation): Message[] => {
  const byId = new Map(c.tree.nodes.map((n) => [n.id, n.message]));
  return c.tree.path.map((id) => byId.get(id)!);
};

/** A schema's verdict, with its issues when it refuses (what a failing property prints). */
function check(
  schema: typeof openAiChatRequestSchema | typeof anthropicMessagesRequestSchema,
  body: unknown,
) {
  const parsed = schema.safeParse(JSON.parse(JSON.stringify(body)));
  return parsed.success ? 'valid' : parsed.error.issues;
}

/** Whether an export may be empty: nothing in the path any provider would be sent (no text, no attachment). */
const nothingToSend = (messages: readonly Message[]) =>
  messages.every((m) =>
    m.content.every((b) => !(b.type === 'attachment' || (b.type === 'text' && b.text.trim()))),
  );

function expectValidExports(system: string | null, messages: readonly Message[]) {
  const openai = toOpenAi('openai:gpt-4o', system, messages);
  const anthropic = toAnthropic('anthropic:claude-x', system, messages);
  if (openai.messages.length) expect(check(openAiChatRequestSchema, openai)).toBe('valid');
  else expect(nothingToSend(messages)).toBe(true);
  if (anthropic.messages.length) expect(check(anthropicMessagesRequestSchema, anthropic)).toBe('valid');
  else expect(nothingToSend(messages)).toBe(true);
  return { openai, anthropic };
}

describe('exports of any tree', () => {
  it('validate against the OpenAI and Anthropic request schemas (property)', () => {
    fc.assert(
      fc.property(canopyDocumentArb(16), (doc) => {
        const byId = new Map(doc.tree.nodes.map((n) => [n.id, n.message]));
        expectValidExports(
          doc.session.system,
          doc.tree.path.map((id) => byId.get(id)!),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('validate for paths of tool rounds and runs of one role, and read back to the same export (property)', () => {
    fc.assert(
      fc.property(pathArb(10), fc.option(fc.string({ minLength: 1 }), { nil: null }), (messages, system) => {
        const { openai, anthropic } = expectValidExports(system, messages);
        // What an export says, an import of it says again: exporting that gives the same request.
        const json = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
        const fromO = fromOpenAi(json(openai), NOW);
        expect(toOpenAi('openai:gpt-4o', fromO.session.system, pathOf(fromO))).toEqual(openai);
        const fromA = fromAnthropic(json(anthropic), NOW);
        expect(toAnthropic('anthropic:claude-x', fromA.session.system, pathOf(fromA))).toEqual(anthropic);
      }),
      { numRuns: 300 },
    );
  });
});

/** The import's verdict: a FormatError naming a message (`data[3]...` or `data.messages[3]...`), or its exports. */
function importOrRefuse(read: () => Conversation) {
  let conversation: Conversation;
  try {
    conversation = read();
  } catch (err) {
    expect(err).toBeInstanceOf(FormatError);
    expect((err as FormatError).field).toMatch(/^data(\.messages)?\[\d+\]/);
    return 'refused';
  }
  expectValidExports(conversation.session.system, pathOf(conversation));
  return 'imported';
}

describe('imports of provider input', () => {
  it('OpenAI messages: refused naming the message, or exported as valid requests (property)', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(openAiMessagesArb, fc.boolean(), (messages, wrapped) => {
        seen.add(importOrRefuse(() => fromOpenAi(wrapped ? { model: 'gpt-4o', messages } : messages, NOW)));
      }),
      { numRuns: 400 },
    );
    expect([...seen].sort()).toEqual(['imported', 'refused']);
  });

  it('Anthropic messages: refused naming the message, or exported as valid requests (property)', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(anthropicMessagesArb, fc.boolean(), (messages, wrapped) => {
        seen.add(
          importOrRefuse(() => fromAnthropic(wrapped ? { model: 'claude-x', messages } : messages, NOW)),
        );
      }),
      { numRuns: 400 },
    );
    expect([...seen].sort()).toEqual(['imported', 'refused']);
  });
});

/** The FormatError a conversion throws (undefined when it does not). */
function refusal(read: () => unknown): FormatError | undefined {
  try {
    read();
  } catch (err) {
    if (err instanceof FormatError) return err;
    throw err;
  }
  return undefined;
}

describe('the cases a hostile tenant sends', () => {
  const text = (t: string) => ({ type: 'text', text: t });

  it('consecutive user messages become one Anthropic user message (OpenAI keeps them apart)', () => {
    const read = fromOpenAi(
      [
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
        { role: 'assistant', content: 'c' },
      ],
      NOW,
    );
    expect(toAnthropic('anthropic:claude-x', null, pathOf(read)).messages).toEqual([
      { role: 'user', content: [text('a'), text('b')] },
      { role: 'assistant', content: [text('c')] },
    ]);
    expect(toOpenAi('openai:gpt-4o', null, pathOf(read)).messages).toEqual([
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
      { role: 'assistant', content: 'c' },
    ]);
  });

  it('a ChatGPT chain code -> tool -> answer exports one assistant message', () => {
    const node = (id: string, parent: string | null, children: string[], message: unknown) => ({
      id,
      parent,
      children,
      message,
    });
    const read = fromChatGpt(
      {
        mapping: {
          root: node('root', null, ['u'], null),
          u: node('u', 'root', ['code'], {
            author: { role: 'user' },
            create_time: 1,
            content: { content_type: 'text', parts: ['Sum 1..10'] },
          }),
          code: node('code', 'u', ['tool'], {
            author: { role: 'assistant' },
            create_time: 2,
            recipient: 'python',
            content: { content_type: 'code', language: 'python', text: 'sum(range(11))' },
          }),
          tool: node('tool', 'code', ['answer'], {
            author: { role: 'tool', name: 'python' },
            create_time: 3,
            content: { content_type: 'execution_output', text: '55' },
          }),
          answer: node('answer', 'tool', [], {
            author: { role: 'assistant' },
            create_time: 4,
            content: { content_type: 'text', parts: ['It is 55.'] },
          }),
        },
        current_node: 'answer',
      },
      NOW,
    );
    const exported = toAnthropic('anthropic:claude-x', null, pathOf(read));
    expect(exported.messages).toEqual([
      { role: 'user', content: [text('Sum 1..10')] },
      { role: 'assistant', content: [text('```python\nsum(range(11))\n```'), text('It is 55.')] },
    ]);
    expect(check(anthropicMessagesRequestSchema, exported)).toBe('valid');
  });

  it('refuses an orphan tool result, naming the message', () => {
    expect(refusal(() => fromOpenAi([{ role: 'tool', tool_call_id: 'nobody' }], NOW))?.field).toBe(
      'data[0].tool_call_id',
    );
    expect(
      refusal(() =>
        fromOpenAi(
          {
            messages: [
              { role: 'user', content: 'hi' },
              { role: 'assistant', content: null, tool_calls: [call('a', '{}')] },
              { role: 'tool', tool_call_id: 'a', content: 'ok' },
              { role: 'user', content: 'again' },
              { role: 'tool', tool_call_id: 'a', content: 'late' },
            ],
          },
          NOW,
        ),
      )?.field,
    ).toBe('data.messages[4].tool_call_id');
    expect(
      refusal(() =>
        fromAnthropic(
          [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nobody', content: 'x' }] }],
          NOW,
        ),
      )?.field,
    ).toBe('data[0].content[0].tool_use_id');
  });

  it('refuses arguments that are no JSON object and inputs that are no object', () => {
    const bad = refusal(() =>
      fromOpenAi(
        [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: null, tool_calls: [call('a', '{not json')] },
          { role: 'tool', tool_call_id: 'a', content: 'ok' },
        ],
        NOW,
      ),
    );
    expect(bad?.field).toBe('data[1].tool_calls[0].function.arguments');
    expect(bad?.code).toBe('bad_request');
    expect(
      refusal(() => fromOpenAi([{ role: 'assistant', content: null, tool_calls: [call('a', '[1,2]')] }], NOW))
        ?.field,
    ).toBe('data[0].tool_calls[0].function.arguments');
    expect(
      refusal(() =>
        fromAnthropic(
          [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: '{not json' }] }],
          NOW,
        ),
      )?.field,
    ).toBe('data[0].content[0].input');
  });

  it('refuses a call left unanswered before the next message; a last one waits and is left out of exports', () => {
    expect(
      refusal(() =>
        fromOpenAi(
          [
            { role: 'assistant', content: null, tool_calls: [call('a', '{}'), call('b', '{}')] },
            { role: 'tool', tool_call_id: 'a', content: 'ok' },
            { role: 'user', content: 'next' },
          ],
          NOW,
        ),
      )?.field,
    ).toBe('data[0].tool_calls[1]');
    expect(
      refusal(() =>
        fromAnthropic(
          [
            { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] },
            { role: 'user', content: 'never mind' },
          ],
          NOW,
        ),
      )?.field,
    ).toBe('data[0].content[0]');
    const waiting = fromOpenAi(
      [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: 'Looking.', tool_calls: [call('a', '{"city":"Paris"}')] },
      ],
      NOW,
    );
    expect(pathOf(waiting)[1]!.content).toHaveLength(2);
    expect(toOpenAi('openai:gpt-4o', null, pathOf(waiting)).messages).toEqual([
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: 'Looking.' },
    ]);
  });

  it('refuses tool blocks in the wrong role and a tool_use answered twice', () => {
    expect(
      refusal(() =>
        fromAnthropic([{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'f' }] }], NOW),
      )?.field,
    ).toBe('data[0].content[0].type');
    expect(
      refusal(() =>
        fromAnthropic(
          [
            { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] },
            {
              role: 'user',
              content: [
                { type: 'tool_result', tool_use_id: 'a', content: '1' },
                { type: 'tool_result', tool_use_id: 'a', content: '2' },
              ],
            },
          ],
          NOW,
        ),
      )?.field,
    ).toBe('data[1].content[1].tool_use_id');
  });

  it('exports a tree holding what imports now refuse as valid requests', () => {
    const tree: Message[] = [
      {
        role: 'user',
        content: [{ type: 'tool_result', toolUseId: 'nobody', content: 'x', isError: false }],
        timestamp: 0,
      },
      { role: 'user', content: [{ type: 'text', text: 'go' }], timestamp: 0 },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', text: 'unsigned' },
          { type: 'tool_use', id: 'call:1', name: 'f', input: '{not json' },
          { type: 'tool_use', id: 'unanswered', name: 'g', input: {} },
        ],
        timestamp: 0,
      },
      // A prompt steered in between the call and its result.
      { role: 'user', content: [{ type: 'text', text: 'steer' }], timestamp: 0 },
      {
        role: 'user',
        content: [
          { type: 'tool_result', toolUseId: 'call:1', content: 'one', isError: false },
          { type: 'tool_result', toolUseId: 'call:1', content: 'again', isError: false },
        ],
        timestamp: 0,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'done  ' }], timestamp: 0 },
    ];
    const { openai, anthropic } = expectValidExports(null, tree);
    expect(anthropic.messages).toEqual([
      { role: 'user', content: [text('go')] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_1', name: 'f', input: { value: '{not json' } }],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'one' }, text('steer')],
      },
      { role: 'assistant', content: [text('done')] },
    ]);
    expect(openai.messages).toEqual([
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call:1', type: 'function', function: { name: 'f', arguments: '{"value":"{not json"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call:1', content: 'one' },
      { role: 'user', content: 'steer' },
      { role: 'assistant', content: 'done  ' },
    ]);
  });

  it('gives repeated tool ids a fresh one, call and result alike', () => {
    const round = (id: string, result: string): Message[] => [
      { role: 'assistant', content: [{ type: 'tool_use', id, name: 'f', input: {} }], timestamp: 0 },
      {
        role: 'user',
        content: [{ type: 'tool_result', toolUseId: id, content: result, isError: false }],
        timestamp: 0,
      },
    ];
    const { anthropic } = expectValidExports(null, [
      { role: 'user', content: [{ type: 'text', text: 'go' }], timestamp: 0 },
      ...round('t', 'first'),
      ...round('t', 'second'),
    ]);
    const ids = anthropic.messages.flatMap((m) =>
      m.content.flatMap((b) =>
        b.type === 'tool_use' ? [b.id] : b.type === 'tool_result' ? [b.tool_use_id] : [],
      ),
    );
    expect(ids).toEqual(['t', 't', 't_2', 't_2']);
  });
});

function call(id: string, args: string) {
  return { id, type: 'function', function: { name: 'f', arguments: args } };
}
