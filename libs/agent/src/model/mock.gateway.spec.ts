import { assistantMessage, messageText, userMessage, type Message } from '@canopy/core';
import { countWords, MockGateway, scriptIndex, wordChunks } from './mock.gateway';
import { ModelError, type ModelRequest, type ModelStreamPart } from './model-gateway.port';

const T = 1_700_000_000_000;

function request(over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: 'mock:echo',
    system: null,
    messages: [userMessage('hello there world', T)],
    tools: [],
    opts: {},
    attempt: 0,
    signal: new AbortController().signal,
    ...over,
  };
}

async function run(req: ModelRequest): Promise<{ parts: ModelStreamPart[]; error?: ModelError }> {
  const parts: ModelStreamPart[] = [];
  try {
    for await (const part of new MockGateway().stream(req)) parts.push(part);
    return { parts };
  } catch (error) {
    if (!(error instanceof ModelError)) throw error;
    return { parts, error };
  }
}

function finishOf(parts: ModelStreamPart[]) {
  const last = parts.at(-1);
  if (last?.type !== 'finish') throw new Error(`last part is ${last?.type}`);
  return last;
}

describe('wordChunks', () => {
  it('attaches the separating whitespace to the next word and joins back exactly', () => {
    expect(wordChunks('Echo: hello  world')).toEqual(['Echo:', ' hello', '  world']);
    expect(wordChunks('a\nb ')).toEqual(['a', '\nb ']);
    expect(wordChunks('')).toEqual([]);
    expect(wordChunks('   ')).toEqual(['   ']);
    const text = ' lead and trail  ';
    expect(wordChunks(text).join('')).toBe(text);
  });

  it('counts whitespace-separated words', () => {
    expect(countWords(' a  b\nc ')).toBe(3);
    expect(countWords('')).toBe(0);
  });
});

describe('mock:echo', () => {
  it('numbers its replies with `numbered`: a second answer to the same messages differs, a new prompt starts at 1', async () => {
    const gateway = new MockGateway();
    const textOf = async (req: ModelRequest) => {
      let last: ModelStreamPart | undefined;
      for await (const part of gateway.stream(req)) last = part;
      if (last?.type !== 'finish') throw new Error('no finish');
      return messageText(last.message);
    };
    const numbered = { opts: { numbered: true } };
    expect(await textOf(request(numbered))).toBe('Echo #1: hello there world');
    expect(await textOf(request(numbered))).toBe('Echo #2: hello there world');
    expect(await textOf(request({ ...numbered, messages: [userMessage('another', T)] }))).toBe(
      'Echo #1: another',
    );
    expect(await textOf(request())).toBe('Echo: hello there world');
  });

  it('streams "Echo: <last user text>" word by word and finishes with the message and word usage', async () => {
    const messages: Message[] = [
      userMessage('first question', T),
      assistantMessage('an answer', T),
      userMessage('second one please', T),
      assistantMessage('ok', T),
      {
        role: 'user',
        timestamp: T,
        content: [{ type: 'tool_result', toolUseId: 'x', content: 'r', isError: false }],
      },
    ];
    const { parts, error } = await run(request({ messages }));
    expect(error).toBeUndefined();
    expect(parts.slice(0, -1)).toEqual([
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, delta: 'Echo:' },
      { type: 'text_delta', index: 0, delta: ' second' },
      { type: 'text_delta', index: 0, delta: ' one' },
      { type: 'text_delta', index: 0, delta: ' please' },
      { type: 'text_end', index: 0 },
    ]);
    const finish = finishOf(parts);
    expect(finish.finishReason).toBe('stop');
    expect(finish.message).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'Echo: second one please' }],
      timestamp: expect.any(Number),
    });
    // 2 + 2 + 3 + 1 words of text in the request; 4 words in the reply.
    expect(finish.usage).toMatchObject({ inputTokens: 8, outputTokens: 4, totalTokens: 12, totalCost: 0 });
  });

  it('waits delayMs per word and ends with ModelError aborted when the signal fires mid-stream', async () => {
    const controller = new AbortController();
    const parts: ModelStreamPart[] = [];
    const started = Date.now();
    let caught: unknown;
    try {
      for await (const part of new MockGateway().stream(
        request({ opts: { delayMs: 40 }, signal: controller.signal }),
      )) {
        parts.push(part);
        if (part.type === 'text_delta') controller.abort();
      }
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ModelError);
    expect(caught).toMatchObject({ code: 'aborted', details: { streamed: true }, retryable: false });
    expect(parts.map((p) => p.type)).toEqual(['text_start', 'text_delta']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(30);
  });

  it('cuts a pending delay short on abort', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const started = Date.now();
    const { error } = await run(request({ opts: { delayMs: 5_000 }, signal: controller.signal }));
    expect(error?.code).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('refuses to start on an aborted signal', async () => {
    const controller = new AbortController();
    controller.abort();
    const { parts, error } = await run(request({ signal: controller.signal }));
    expect(parts).toEqual([]);
    expect(error).toMatchObject({ code: 'aborted', details: { streamed: false } });
  });
});

describe('mock:script', () => {
  const script = (entries: unknown[], attempt = 0, over: Partial<ModelRequest> = {}) =>
    request({ model: 'mock:script', opts: { script: entries }, attempt, ...over });

  it('plays the entry after the ones its context consumed', async () => {
    const context = [userMessage('hi', T), assistantMessage('zero', T), userMessage('more', T)];
    const { parts } = await run(script([{ text: 'zero' }, { text: 'one two' }], 0, { messages: context }));
    expect(finishOf(parts).message.content).toEqual([{ type: 'text', text: 'one two' }]);
    expect(finishOf(parts).usage).toMatchObject({ inputTokens: 3, outputTokens: 2 });
  });

  it('counts an error entry as consumed by the attempt that hit it, never played twice', () => {
    const entries = [{ error: 'flaky', retryable: true }, { text: 'a' }, { error: 'x' }, { text: 'b' }, {}];
    const at = (replies: number, attempt: number) =>
      scriptIndex({
        opts: { script: entries },
        attempt,
        messages: Array.from({ length: replies }, () => assistantMessage('r', T)),
      });
    // First step: entry 0 fails, its retry plays entry 1.
    expect([at(0, 0), at(0, 1)]).toEqual([0, 1]);
    // With that reply in the context, the next step plays entry 2 (an error), its retry entry 3; then entry 4.
    expect([at(1, 0), at(1, 1), at(2, 0)]).toEqual([2, 3, 4]);
    // Past the script: the index of the missing entry.
    expect(at(4, 0)).toBe(6);
  });

  it('streams tool calls as tool_use blocks with generated ids and finishes with tool_use', async () => {
    const { parts } = await run(
      script([
        {
          text: 'Checking.',
          toolCalls: [
            { name: 'get_weather', input: { city: 'Paris' } },
            { name: 'now', input: {} },
          ],
        },
      ]),
    );
    expect(parts.map((p) => p.type)).toEqual([
      'text_start',
      'text_delta',
      'text_end',
      'tool_use_start',
      'tool_use_delta',
      'tool_use_end',
      'tool_use_start',
      'tool_use_delta',
      'tool_use_end',
      'finish',
    ]);
    const start = parts[3] as Extract<ModelStreamPart, { type: 'tool_use_start' }>;
    expect(start).toMatchObject({ index: 1, name: 'get_weather', id: expect.stringMatching(/^toolu_\w+$/) });
    expect(parts[4]).toEqual({ type: 'tool_use_delta', index: 1, id: start.id, delta: '{"city":"Paris"}' });
    expect(parts[5]).toEqual({
      type: 'tool_use_end',
      index: 1,
      block: { type: 'tool_use', id: start.id, name: 'get_weather', input: { city: 'Paris' } },
    });
    const finish = finishOf(parts);
    expect(finish.finishReason).toBe('tool_use');
    expect(finish.message.content).toHaveLength(3);
    const ids = finish.message.content.flatMap((b) => (b.type === 'tool_use' ? [b.id] : []));
    expect(new Set(ids).size).toBe(2);
  });

  it('streams thinking before text', async () => {
    const { parts } = await run(script([{ thinking: 'let me see', text: 'done' }]));
    expect(parts.slice(0, 5)).toEqual([
      { type: 'thinking_start', index: 0 },
      { type: 'thinking_delta', index: 0, delta: 'let' },
      { type: 'thinking_delta', index: 0, delta: ' me' },
      { type: 'thinking_delta', index: 0, delta: ' see' },
      { type: 'thinking_end', index: 0 },
    ]);
    expect(finishOf(parts).message.content).toEqual([
      { type: 'thinking', text: 'let me see' },
      { type: 'text', text: 'done' },
    ]);
  });

  it('throws a scripted error before streaming, not retryable unless the entry says so', async () => {
    const plain = await run(script([{ error: 'boom' }]));
    expect(plain.parts).toEqual([]);
    expect(plain.error).toMatchObject({
      code: 'provider_error',
      message: 'boom',
      retryable: false,
      details: { streamed: false },
    });
    const retryable = await run(script([{ error: 'flaky', retryable: true }]));
    expect(retryable.error).toMatchObject({ code: 'provider_error', retryable: true });
  });

  it('fails with bad_model_request past the end of the script or without one', async () => {
    const past = await run(script([{ text: 'only' }], 1));
    expect(past.error).toMatchObject({ code: 'bad_model_request', message: 'mock:script has no entry 1' });
    expect(past.error?.retryable).toBe(false);
    const none = await run(request({ model: 'mock:script' }));
    expect(none.error?.code).toBe('bad_model_request');
  });

  it('honours delayMs and abort', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const { parts, error } = await run(
      script([{ delayMs: 5_000, text: 'slow' }], 0, { signal: controller.signal }),
    );
    expect(error).toMatchObject({ code: 'aborted', details: { streamed: true } });
    expect(parts).toEqual([{ type: 'text_start', index: 0 }]);
  });

  it('an entry with only a delay finishes empty after it', async () => {
    const started = Date.now();
    const { parts } = await run(script([{ delayMs: 30 }]));
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    expect(parts).toHaveLength(1);
    expect(finishOf(parts)).toMatchObject({ finishReason: 'stop', message: { content: [] } });
  });
});

describe('MockGateway.check', () => {
  it('knows mock:echo and mock:script only', () => {
    const gateway = new MockGateway();
    expect(gateway.check('mock:echo')).toBeNull();
    expect(gateway.check('mock:script')).toBeNull();
    expect(gateway.check('mock:nope')).toMatch(/unknown mock model/);
  });
});
