import type { AttachmentBlock, Message } from '@canopy/core';
import o200k from 'gpt-tokenizer/cjs/encoding/o200k_base';
import type { ModelToolSpec } from '../model/model-gateway.port';
import { IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, tokenCounterFor } from './tokens';

// The figures below were computed with gpt-tokenizer's encodings: "hello world" is 2 tokens in o200k_base, the
// fox sentence 10, "こんにちは世界" 2 in o200k_base and 4 in cl100k_base.
const FOX = 'The quick brown fox jumps over the lazy dog.';
const user = (...content: Message['content']): Message => ({ role: 'user', content, timestamp: 0 });
const assistant = (...content: Message['content']): Message => ({ role: 'assistant', content, timestamp: 0 });
const text = (t: string) => ({ type: 'text' as const, text: t });
const image: AttachmentBlock = { type: 'attachment', mediaType: 'image/png', data: 'iVBORw0KGgo=' };
/** 4,000 base64 characters: 3,000 bytes, 750 tokens at 4 bytes a token. */
const pdf: AttachmentBlock = { type: 'attachment', mediaType: 'application/pdf', data: 'A'.repeat(4_000) };

const calculator: ModelToolSpec = {
  name: 'calculator', // 1 token
  description: 'Evaluates an arithmetic expression.', // 6 tokens
  // {"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}: 19 tokens
  inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
};

describe('tokenCounterFor', () => {
  it('counts text with o200k_base for the mocks, exactly', () => {
    const mock = tokenCounterFor('mock:echo');
    expect(mock.text('hello world')).toBe(2);
    expect(mock.text(FOX)).toBe(10);
    expect(mock.text('こんにちは世界')).toBe(2);
    expect(mock.text('')).toBe(0);
    // A special token in a message is plain text to a provider: counted as such, never refused.
    expect(mock.text('<|endoftext|>')).toBe(7);
  });

  it("counts OpenAI's models with their own encoding: o200k_base for gpt-4o and later, cl100k_base for gpt-4 and gpt-3.5", () => {
    for (const model of [
      'openai:gpt-4o',
      'openai:gpt-4.1-mini',
      'openai:gpt-5',
      'openai:o3',
      'openai:o4-mini',
    ])
      expect([model, tokenCounterFor(model).text('こんにちは世界')]).toEqual([model, 2]);
    for (const model of ['openai:gpt-4', 'openai:gpt-4-turbo', 'openai:gpt-3.5-turbo'])
      expect([model, tokenCounterFor(model).text('こんにちは世界')]).toEqual([model, 4]);
    expect(tokenCounterFor('openai:gpt-4.1').text(FOX)).toBe(10);
  });

  it('adds a 15% margin (rounded up) for providers without a public tokenizer, and for an unknown model', () => {
    for (const model of ['anthropic:claude-sonnet-4-5', 'openai-compatible:llama3.1:8b', 'nonsense']) {
      expect(tokenCounterFor(model).text(FOX)).toBe(12); // 10 × 1.15 = 11.5
      expect(tokenCounterFor(model).text('hello world')).toBe(3); // 2.3
    }
    // Twice the sentence is 20 tokens: 23 with the margin.
    expect(tokenCounterFor('mock:echo').text(`${FOX} ${FOX}`)).toBe(20);
    expect(tokenCounterFor('anthropic:claude-haiku-4-5').text(`${FOX} ${FOX}`)).toBe(23);
  });

  it('estimates text as characters / 4 when asked (counts only shown: no tokenizer), margins and framing kept', () => {
    expect(tokenCounterFor('mock:echo', { estimate: true }).text('hello world')).toBe(3);
    expect(tokenCounterFor('anthropic:claude-sonnet-4-5', { estimate: true }).text('a'.repeat(40))).toBe(12);
    const hello: Message = { role: 'user', content: [{ type: 'text', text: 'hello world' }], timestamp: 0 };
    expect(tokenCounterFor('mock:echo', { estimate: true }).message(hello)).toBe(MESSAGE_OVERHEAD_TOKENS + 3);
  });

  it('counts a message as its framing and its text: 4 tokens besides', () => {
    expect(MESSAGE_OVERHEAD_TOKENS).toBe(4);
    const mock = tokenCounterFor('mock:echo');
    expect(mock.message(user(text('hello world')))).toBe(6);
    expect(mock.message(user(text('hello world'), text(FOX)))).toBe(16);
    expect(mock.message(user())).toBe(4);
    // The margin applies to the text, not to the framing: 4 + ceil(12 × 1.15).
    expect(tokenCounterFor('anthropic:claude-sonnet-4-5').message(user(text('hello world'), text(FOX)))).toBe(
      18,
    );
  });

  it('counts thinking as each provider is sent it: all for the mocks and OpenAI-compatible, signed for Anthropic, none for OpenAI', () => {
    // "Let me think about this." is 6 tokens, "Done." 2.
    const unsigned = assistant({ type: 'thinking', text: 'Let me think about this.' }, text('Done.'));
    const signed = assistant(
      { type: 'thinking', text: 'Let me think about this.', signature: 'sig' },
      text('Done.'),
    );
    expect(tokenCounterFor('mock:script').message(unsigned)).toBe(12);
    expect(tokenCounterFor('openai-compatible:qwen3').message(unsigned)).toBe(14); // 4 + ceil(8 × 1.15)
    expect(tokenCounterFor('anthropic:claude-sonnet-4-5').message(unsigned)).toBe(7); // 4 + ceil(2 × 1.15)
    expect(tokenCounterFor('anthropic:claude-sonnet-4-5').message(signed)).toBe(14);
    expect(tokenCounterFor('openai:gpt-5').message(signed)).toBe(6);
  });

  it('counts a tool use as its id, name and input JSON, and a tool result as its id and text, 4 tokens each besides', () => {
    const mock = tokenCounterFor('mock:script');
    // "toolu_01" 4, "calculator" 1, {"expression":"2+2"} 7.
    const call = assistant({
      type: 'tool_use',
      id: 'toolu_01',
      name: 'calculator',
      input: { expression: '2+2' },
    });
    expect(mock.message(call)).toBe(4 + 4 + 12);
    const result = user({ type: 'tool_result', toolUseId: 'toolu_01', content: '4', isError: false });
    expect(mock.message(result)).toBe(4 + 4 + 5);
    // Blocks: text and attachments ("Here is the file" is 4 tokens).
    const withImage = user({
      type: 'tool_result',
      toolUseId: 'toolu_01',
      content: [text('Here is the file'), image],
      isError: false,
    });
    expect(mock.message(withImage)).toBe(4 + 4 + 8 + IMAGE_TOKENS);
    // An error result is sent as its text alone ("Failed: division by zero" is 5 tokens).
    const failed = user({
      type: 'tool_result',
      toolUseId: 'toolu_01',
      content: [text('Failed: division by zero'), image],
      isError: true,
    });
    expect(mock.message(failed)).toBe(4 + 4 + 9);
  });

  it('estimates attachments: 1,600 tokens an image or a file by URL, one token per 4 bytes of other data', () => {
    const mock = tokenCounterFor('mock:echo');
    expect(mock.message(user(image))).toBe(4 + 1_600);
    expect(
      mock.message(user({ type: 'attachment', mediaType: 'image/jpeg', url: 'https://x.test/a.jpg' })),
    ).toBe(1_604);
    expect(mock.message(user(text('Here is the file'), pdf))).toBe(4 + 4 + 750);
    expect(
      mock.message(user({ type: 'attachment', mediaType: 'application/pdf', url: 'https://x.test/a.pdf' })),
    ).toBe(1_604);
    // Neither data nor URL: nothing is sent.
    expect(mock.message(user({ type: 'attachment', mediaType: 'text/plain' }))).toBe(4);
    // Estimates take no margin: 4 + ceil(10 × 1.15) + 1,600.
    expect(tokenCounterFor('anthropic:claude-opus-4-1').message(user(text(FOX), image))).toBe(1_616);
  });

  it('counts the system prompt with its framing, nothing when there is none', () => {
    // "You are a helpful assistant." is 6 tokens.
    expect(tokenCounterFor('mock:echo').system('You are a helpful assistant.')).toBe(10);
    expect(tokenCounterFor('anthropic:claude-sonnet-4-5').system('You are a helpful assistant.')).toBe(11);
    expect(tokenCounterFor('mock:echo').system(null)).toBe(0);
    expect(tokenCounterFor('mock:echo').system('')).toBe(0);
  });

  it("counts tools as their names, descriptions and schemas, 8 tokens each and the request's preamble besides", () => {
    expect(tokenCounterFor('mock:script').tools([])).toBe(0);
    // 9 (preamble) + 8 + 26.
    expect(tokenCounterFor('mock:script').tools([calculator])).toBe(43);
    expect(tokenCounterFor('openai:gpt-4.1').tools([calculator, calculator])).toBe(9 + 2 * 34);
    // Anthropic's tool-use system prompt (346) + 8 + ceil(26 × 1.15).
    expect(tokenCounterFor('anthropic:claude-sonnet-4-5').tools([calculator])).toBe(384);
  });

  it('counts a 2,000-message path message by message', () => {
    const mock = tokenCounterFor('mock:echo');
    const path: Message[] = [];
    for (let i = 0; i < 1_000; i++) {
      path.push(user(text(i % 2 === 0 ? 'hello world' : 'こんにちは世界')));
      path.push(assistant(text(FOX), { type: 'tool_use', id: 'toolu_01', name: 'calculator', input: {} }));
    }
    // Users: 4 + 2 each. Assistants: 4 + 10, and the tool use 4 + 4 + 1 + 1 ("{}" is one token).
    const counts = path.map((m) => mock.message(m));
    expect(counts.slice(0, 4)).toEqual([6, 24, 6, 24]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(1_000 * 6 + 1_000 * 24);
  });

  it('remembers each message: a path counted again encodes only the messages that are new', () => {
    const mock = tokenCounterFor('mock:echo');
    const path: Message[] = [];
    for (let i = 0; i < 1_000; i++) path.push(user(text(`prompt ${i}`)), assistant(text(`${FOX} ${i}`)));
    const encode = jest.spyOn(o200k, 'countTokens');
    try {
      const first = path.map((m) => mock.message(m));
      expect(encode).toHaveBeenCalledTimes(2_000);
      encode.mockClear();
      // The same messages again (as after a run, the live tree's path): nothing is encoded.
      expect(path.map((m) => mock.message(m))).toEqual(first);
      expect(encode).not.toHaveBeenCalled();
      // The path a run made longer: only its new messages are.
      path.push(user(text('one more')), assistant(text('and its reply')));
      const longer = path.map((m) => mock.message(m));
      expect(encode).toHaveBeenCalledTimes(2);
      expect(longer.slice(0, 2_000)).toEqual(first);
      // Remembered per counter: another profile on the same encoding (its margin differs) counts them afresh.
      encode.mockClear();
      // "prompt 0" is 3 tokens: 4 + ceil(3 × 1.15).
      expect(tokenCounterFor('anthropic:claude-sonnet-4-5').message(path[0]!)).toBe(8);
      expect(encode).toHaveBeenCalledTimes(1);
    } finally {
      encode.mockRestore();
    }
  });

  it('shares one counter among the models of one profile', () => {
    expect(tokenCounterFor('mock:echo')).toBe(tokenCounterFor('mock:script'));
    expect(tokenCounterFor('anthropic:claude-sonnet-4-5')).toBe(
      tokenCounterFor('anthropic:claude-haiku-4-5'),
    );
    expect(tokenCounterFor('openai:gpt-4')).not.toBe(tokenCounterFor('openai:gpt-4o'));
  });
});
