import type { LanguageModelUsage } from 'ai';
import { assistantMessage, toolResultMessage, userMessage, type Message } from '@canopy/core';
import { toCanopyUsage, toFinishReason, toModelPrompt, UNKNOWN_TOOL_NAME } from './message-mapping';

const T = 1_700_000_000_000;

function usage(parts: Partial<LanguageModelUsage>): LanguageModelUsage {
  return {
    inputTokens: undefined,
    inputTokenDetails: { noCacheTokens: undefined, cacheReadTokens: undefined, cacheWriteTokens: undefined },
    outputTokens: undefined,
    outputTokenDetails: { textTokens: undefined, reasoningTokens: undefined },
    totalTokens: undefined,
    ...parts,
  };
}

describe('toModelPrompt', () => {
  it('passes the system prompt apart and maps text in both roles', () => {
    const prompt = toModelPrompt('Be brief.', [userMessage('Hi', T), assistantMessage('Hello!', T)], {
      thinking: 'all',
    });
    expect(prompt).toEqual({
      system: 'Be brief.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] },
      ],
    });
  });

  it('leaves out a null or empty system prompt', () => {
    expect(toModelPrompt(null, [], { thinking: 'all' }).system).toBeUndefined();
    expect(toModelPrompt('', [], { thinking: 'all' }).system).toBeUndefined();
  });

  it('turns a tool round into tool-call parts and a tool message named after the call', () => {
    const messages: Message[] = [
      userMessage('Weather in Paris?', T),
      assistantMessage(
        [
          { type: 'text', text: 'Let me look.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
        ],
        T,
      ),
      toolResultMessage(
        [
          { type: 'tool_result', toolUseId: 'toolu_1', content: 'Sunny, 21°C', isError: false },
          { type: 'tool_result', toolUseId: 'toolu_2', content: 'clock broken', isError: true },
        ],
        T,
      ),
    ];
    const { messages: out } = toModelPrompt(null, messages, { thinking: 'all' });
    expect(out[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool-call', toolCallId: 'toolu_1', toolName: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool-call', toolCallId: 'toolu_2', toolName: 'get_time', input: {} },
      ],
    });
    expect(out[2]).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'toolu_1',
          toolName: 'get_weather',
          output: { type: 'text', value: 'Sunny, 21°C' },
        },
        {
          type: 'tool-result',
          toolCallId: 'toolu_2',
          toolName: 'get_time',
          output: { type: 'error-text', value: 'clock broken' },
        },
      ],
    });
    expect(out).toHaveLength(3);
  });

  it('puts the other content of a tool-result message in a user message after the tool message', () => {
    const messages: Message[] = [
      assistantMessage([{ type: 'tool_use', id: 'a', name: 'ls', input: {} }], T),
      {
        role: 'user',
        timestamp: T,
        content: [
          { type: 'text', text: 'also this' },
          { type: 'tool_result', toolUseId: 'a', content: [{ type: 'text', text: 'x' }], isError: false },
        ],
      },
    ];
    const { messages: out } = toModelPrompt(null, messages, { thinking: 'all' });
    expect(out.map((m) => m.role)).toEqual(['assistant', 'tool', 'user']);
    expect(out[1]).toMatchObject({ content: [{ toolName: 'ls', output: { type: 'text', value: 'x' } }] });
    expect(out[2]).toEqual({ role: 'user', content: [{ type: 'text', text: 'also this' }] });
  });

  it('names a result whose call is not in the history with a placeholder', () => {
    const { messages } = toModelPrompt(
      null,
      [toolResultMessage([{ type: 'tool_result', toolUseId: 'gone', content: 'x', isError: false }], T)],
      { thinking: 'all' },
    );
    expect(messages[0]).toMatchObject({
      role: 'tool',
      content: [{ toolCallId: 'gone', toolName: UNKNOWN_TOOL_NAME }],
    });
  });

  it('keeps attachments of a tool result as content parts', () => {
    const { messages } = toModelPrompt(
      null,
      [
        assistantMessage([{ type: 'tool_use', id: 's', name: 'screenshot', input: {} }], T),
        toolResultMessage(
          [
            {
              type: 'tool_result',
              toolUseId: 's',
              isError: false,
              content: [
                { type: 'text', text: 'here' },
                { type: 'attachment', mediaType: 'image/png', data: 'iVBOR' },
                { type: 'attachment', mediaType: 'application/pdf', url: 'https://x.test/a.pdf' },
              ],
            },
          ],
          T,
        ),
      ],
      { thinking: 'all' },
    );
    expect(messages[1]).toMatchObject({
      role: 'tool',
      content: [
        {
          output: {
            type: 'content',
            value: [
              { type: 'text', text: 'here' },
              { type: 'image-data', data: 'iVBOR', mediaType: 'image/png' },
              { type: 'file-url', url: 'https://x.test/a.pdf', mediaType: 'application/pdf' },
            ],
          },
        },
      ],
    });
  });

  it('maps attachments to image and file parts', () => {
    const { messages } = toModelPrompt(
      null,
      [
        userMessage(
          [
            { type: 'text', text: 'look' },
            { type: 'attachment', mediaType: 'image/jpeg', data: '/9j/4AAQ' },
            { type: 'attachment', mediaType: 'image/png', url: 'https://x.test/i.png' },
            { type: 'attachment', mediaType: 'text/csv', data: 'YSxi', name: 'a.csv' },
            { type: 'attachment', mediaType: 'text/plain' },
          ],
          T,
        ),
      ],
      { thinking: 'all' },
    );
    expect(messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', image: '/9j/4AAQ', mediaType: 'image/jpeg' },
        { type: 'image', image: new URL('https://x.test/i.png'), mediaType: 'image/png' },
        { type: 'file', data: 'YSxi', mediaType: 'text/csv', filename: 'a.csv' },
      ],
    });
  });

  it('replays thinking as each provider accepts it', () => {
    const history = [
      userMessage('q', T),
      assistantMessage(
        [
          { type: 'thinking', text: 'signed thought', signature: 'sig' },
          { type: 'thinking', text: 'plain thought' },
          { type: 'text', text: 'a' },
        ],
        T,
      ),
    ];
    expect(toModelPrompt(null, history, { thinking: 'signed' }).messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'signed thought', providerOptions: { anthropic: { signature: 'sig' } } },
        { type: 'text', text: 'a' },
      ],
    });
    expect(toModelPrompt(null, history, { thinking: 'all' }).messages[1]).toMatchObject({
      content: [
        { type: 'reasoning', text: 'signed thought' },
        { type: 'reasoning', text: 'plain thought' },
        {},
      ],
    });
    expect(toModelPrompt(null, history, { thinking: 'none' }).messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'a' }],
    });
  });

  it('drops empty text blocks and messages left empty', () => {
    const { messages } = toModelPrompt(
      null,
      [userMessage('', T), assistantMessage([{ type: 'text', text: '' }], T), userMessage('x', T)],
      { thinking: 'all' },
    );
    expect(messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'x' }] }]);
  });
});

describe('toCanopyUsage', () => {
  it('counts cached tokens apart from input tokens', () => {
    const u = toCanopyUsage(
      usage({
        inputTokens: 110,
        inputTokenDetails: { noCacheTokens: 10, cacheReadTokens: 80, cacheWriteTokens: 20 },
        outputTokens: 7,
        totalTokens: 117,
      }),
    );
    expect(u).toMatchObject({
      inputTokens: 10,
      cacheReadTokens: 80,
      cacheWriteTokens: 20,
      outputTokens: 7,
      totalTokens: 117,
      totalCost: 0,
    });
  });

  it('derives uncached input and the total when the provider leaves them out', () => {
    const u = toCanopyUsage(
      usage({
        inputTokens: 50,
        inputTokenDetails: { noCacheTokens: undefined, cacheReadTokens: 30, cacheWriteTokens: undefined },
        outputTokens: 5,
      }),
    );
    expect(u).toMatchObject({ inputTokens: 20, cacheReadTokens: 30, cacheWriteTokens: 0, totalTokens: 55 });
  });

  it('is all zeros without usage', () => {
    expect(toCanopyUsage(undefined).totalTokens).toBe(0);
    expect(toCanopyUsage(usage({})).totalTokens).toBe(0);
  });
});

describe('toFinishReason', () => {
  it.each([
    ['stop', 'stop'],
    ['tool-calls', 'tool_use'],
    ['length', 'length'],
    ['content-filter', 'content_filter'],
    ['error', 'error'],
    ['other', 'other'],
    [undefined, 'other'],
  ])('maps %s to %s', (from, to) => {
    expect(toFinishReason(from)).toBe(to);
  });
});
