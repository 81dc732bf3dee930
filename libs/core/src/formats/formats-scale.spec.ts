// Every conversion is linear in its input: inputs of the shapes that hurt, large enough that a quadratic conversion
// takes minutes (the test's deadline fails it) where a linear one takes a fraction of a second — a ChatGPT mapping
// of 40,000 message-less nodes ending in one exchange, text of a million backticks, trees and arrays 100,000 long or
// deep (no stack overflow either). Times are not asserted: the deadline only catches what is not linear.

import {
  canopyDocument,
  canopyPath,
  emptyChain,
  markdownSession as session,
  messageChain,
  ticks,
  wide,
} from '@canopy/testing';
import { fromAnthropic, toAnthropic } from './anthropic';
import { fromCanopyDocument, MAX_IMPORT_NODES } from './canopy';
import { fromChatGpt } from './chatgpt';
import { toMarkdown } from './markdown';
import { fromOpenAi, toOpenAi } from './openai';

const NOW = 1_700_000_000_000;
/** A deadline for the large inputs: seconds for linear work on a loaded machine, minutes for quadratic. */
const DEADLINE = 60_000;

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

  it('a path of rounds reusing one call id: every round keeps an id of its own, with no scan of those before', () => {
    const ids = toAnthropic('anthropic:claude-x', null, canopyPath(3)).messages.flatMap((m) =>
      m.content.flatMap((b) => (b.type === 'tool_use' ? [b.id] : [])),
    );
    expect(ids).toEqual(['x', 'x_2', 'x_3']);
    const large = toAnthropic('anthropic:claude-x', null, canopyPath(100_000)).messages;
    const last = large.flatMap((m) => m.content.flatMap((b) => (b.type === 'tool_use' ? [b.id] : []))).at(-1);
    expect(last).toBe('x_100000');
  });
});
