// The AI SDK providers over real HTTP: each of anthropic:, openai: (Responses API) and openai-compatible: (Chat
// Completions) talks to a local server speaking its streaming wire format, so request mapping, SSE parsing,
// stream part mapping and error classification run exactly as against the real provider.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TargetPolicy } from '@canopy/common';
import { assistantMessage, toolResultMessage, userMessage, type Message } from '@canopy/core';
import { FakeLlmServer, type FakeApi } from '@canopy/testing';
import { ModelError, type ModelGateway, type ModelRequest, type ModelStreamPart } from './model-gateway.port';
import { createModelGateway } from './model.gateway';

const WEATHER_SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer' } },
  required: ['city'],
};

const PROVIDERS: Array<{ model: string; api: FakeApi }> = [
  { model: 'anthropic:claude-sonnet-4-5', api: 'anthropic' },
  { model: 'openai:gpt-4.1', api: 'responses' },
  { model: 'openai-compatible:llama3:8b', api: 'chat' },
];

let fake: FakeLlmServer;
let gateway: ModelGateway;

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  const configured = { apiKey: 'test-key', baseUrl: fake.baseUrl };
  gateway = createModelGateway({
    providers: { anthropic: configured, openai: configured, openaiCompatible: configured },
  });
});

afterAll(async () => {
  await fake?.close();
});

beforeEach(() => fake.reset());

function request(model: string, over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model,
    system: 'You are terse.',
    messages: [userMessage('Weather in Paris?')],
    tools: [{ name: 'get_weather', description: 'Weather for a city', inputSchema: WEATHER_SCHEMA }],
    opts: {},
    attempt: 0,
    signal: new AbortController().signal,
    ...over,
  };
}

async function run(req: ModelRequest, gw: ModelGateway = gateway) {
  const parts: ModelStreamPart[] = [];
  try {
    for await (const part of gw.stream(req)) parts.push(part);
    return { parts, error: undefined };
  } catch (error) {
    if (!(error instanceof ModelError)) throw error;
    return { parts, error };
  }
}

function finishOf(parts: ModelStreamPart[]) {
  const last = parts.at(-1);
  if (last?.type !== 'finish') throw new Error(`expected finish last, got ${last?.type}`);
  return last;
}

/**
 * Blocks stream one at a time: each starts once, gets deltas only while open and ends before the next starts;
 * finish is last and carries one block per ended block.
 */
function expectWellFormed(parts: ModelStreamPart[]) {
  const open = new Map<number, string>();
  const ended = new Set<number>();
  for (const part of parts.slice(0, -1)) {
    expect(part.type).not.toBe('finish');
    if (part.type === 'finish') continue;
    const kind = part.type.replace(/_(start|delta|end)$/, '');
    if (part.type.endsWith('_start')) {
      expect(open.size).toBe(0);
      expect(ended.has(part.index)).toBe(false);
      open.set(part.index, kind);
    } else {
      expect(open.get(part.index)).toBe(kind);
      if (part.type.endsWith('_end')) {
        open.delete(part.index);
        ended.add(part.index);
      }
    }
  }
  expect(open.size).toBe(0);
  expect(finishOf(parts).message.content).toHaveLength(ended.size);
}

describe.each(PROVIDERS)('$model', ({ model, api }) => {
  it('streams a text reply and finishes with the message and usage', async () => {
    fake.enqueue({
      text: ['Sunny', ' and ', 'warm.'],
      usage: { inputTokens: 12, outputTokens: 4, cacheReadTokens: 3 },
    });
    const { parts, error } = await run(request(model));
    expect(error).toBeUndefined();
    expect(fake.lastRequest().api).toBe(api);
    expectWellFormed(parts);
    expect(parts.slice(0, -1)).toEqual([
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, delta: 'Sunny' },
      { type: 'text_delta', index: 0, delta: ' and ' },
      { type: 'text_delta', index: 0, delta: 'warm.' },
      { type: 'text_end', index: 0 },
    ]);
    const finish = finishOf(parts);
    expect(finish.finishReason).toBe('stop');
    expect(finish.message).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'Sunny and warm.' }],
      timestamp: expect.any(Number),
    });
    expect(finish.usage).toMatchObject({
      inputTokens: 12,
      outputTokens: 4,
      cacheReadTokens: 3,
      cacheWriteTokens: 0,
      totalTokens: 19,
      totalCost: 0,
    });
  });

  it('finishes with the provider’s account of its answer: its id and the model that answered', async () => {
    fake.enqueue({ text: ['Done.'], model: 'answering-model-2026-12-01' });
    const { parts, error } = await run(request(model));
    expect(error).toBeUndefined();
    const finish = finishOf(parts);
    expect(finish.response?.model).toBe('answering-model-2026-12-01');
    expect(finish.response?.id).toMatch(/fake/);
  });

  it('returns a tool call as tool_use parts with the parsed input and finishes with tool_use', async () => {
    fake.enqueue({
      text: ['Checking.'],
      toolCalls: [
        { id: 'call_w1', name: 'get_weather', input: {}, chunks: ['{"city":', ' "Paris",', ' "days": 2}'] },
      ],
    });
    const { parts, error } = await run(request(model));
    expect(error).toBeUndefined();
    expectWellFormed(parts);
    const toolParts = parts.filter((p) => p.type.startsWith('tool_use'));
    expect(toolParts).toEqual([
      { type: 'tool_use_start', index: 1, id: 'call_w1', name: 'get_weather' },
      { type: 'tool_use_delta', index: 1, id: 'call_w1', delta: '{"city":' },
      { type: 'tool_use_delta', index: 1, id: 'call_w1', delta: ' "Paris",' },
      { type: 'tool_use_delta', index: 1, id: 'call_w1', delta: ' "days": 2}' },
      {
        type: 'tool_use_end',
        index: 1,
        block: { type: 'tool_use', id: 'call_w1', name: 'get_weather', input: { city: 'Paris', days: 2 } },
      },
    ]);
    const finish = finishOf(parts);
    expect(finish.finishReason).toBe('tool_use');
    expect(finish.message.content).toEqual([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'call_w1', name: 'get_weather', input: { city: 'Paris', days: 2 } },
    ]);
  });

  it('streams thinking as a thinking block before the text', async () => {
    fake.enqueue({ thinking: ['Paris is ', 'in France.'], signature: 'sig-1', text: ['Sunny.'] });
    const { parts, error } = await run(request(model));
    expect(error).toBeUndefined();
    expectWellFormed(parts);
    const thinking = { type: 'thinking', text: 'Paris is in France.' };
    expect(finishOf(parts).message.content).toEqual([
      api === 'anthropic' ? { ...thinking, signature: 'sig-1' } : thinking,
      { type: 'text', text: 'Sunny.' },
    ]);
  });

  it('sends the mapped system prompt, history with a tool round, tool schema and options', async () => {
    fake.enqueue({ text: ['Sunny.'] });
    const messages: Message[] = [
      userMessage('Weather in Paris?'),
      assistantMessage([
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
      ]),
      toolResultMessage([
        { type: 'tool_result', toolUseId: 'toolu_1', content: '21°C, sunny', isError: false },
      ]),
    ];
    await run(request(model, { messages, opts: { temperature: 0.2, maxTokens: 100 } }));
    const { body, headers } = fake.lastRequest();
    expect(body.stream).toBe(true);
    expect(body.temperature).toBe(0.2);
    if (api === 'anthropic') {
      expect(headers['x-api-key']).toBe('test-key');
      expect(body).toMatchObject({
        model: 'claude-sonnet-4-5',
        max_tokens: 100,
        system: [{ type: 'text', text: 'You are terse.' }],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Checking.' },
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
            ],
          },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '21°C, sunny' }],
          },
        ],
        tools: [{ name: 'get_weather', description: 'Weather for a city', input_schema: WEATHER_SCHEMA }],
      });
    } else if (api === 'responses') {
      expect(headers.authorization).toBe('Bearer test-key');
      expect(body).toMatchObject({
        model: 'gpt-4.1',
        max_output_tokens: 100,
        input: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
          { role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
          { type: 'function_call', call_id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output', call_id: 'toolu_1', output: '21°C, sunny' },
        ],
        tools: [
          {
            type: 'function',
            name: 'get_weather',
            description: 'Weather for a city',
            parameters: WEATHER_SCHEMA,
          },
        ],
      });
    } else {
      expect(headers.authorization).toBe('Bearer test-key');
      expect(body).toMatchObject({
        model: 'llama3:8b',
        max_tokens: 100,
        stream_options: { include_usage: true },
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: 'Checking.',
            tool_calls: [
              {
                id: 'toolu_1',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
              },
            ],
          },
          { role: 'tool', tool_call_id: 'toolu_1', content: '21°C, sunny' },
        ],
        tools: [
          {
            type: 'function',
            function: { name: 'get_weather', description: 'Weather for a city', parameters: WEATHER_SCHEMA },
          },
        ],
      });
    }
  });

  it('fails a 429 before streaming as retryable rate_limited with the Retry-After wait', async () => {
    fake.enqueue({ status: 429, retryAfter: '2' });
    const { parts, error } = await run(request(model));
    expect(parts).toEqual([]);
    expect(error).toMatchObject({
      code: 'rate_limited',
      retryable: true,
      details: { status: 429, retryAfterMs: 2_000, streamed: false },
    });
  });

  it('fails a 500 as a retryable provider_error', async () => {
    fake.enqueue({ status: 500 });
    const { error } = await run(request(model));
    expect(error).toMatchObject({ code: 'provider_error', retryable: true, details: { status: 500 } });
  });

  it('fails a 400 as a bad_model_request that is not retryable', async () => {
    fake.enqueue({ status: 400, message: 'messages: roles must alternate' });
    const { error } = await run(request(model));
    expect(error).toMatchObject({ code: 'bad_model_request', retryable: false, details: { status: 400 } });
    expect(error?.message).toContain('roles must alternate');
  });

  it('fails a 404 as model_not_found', async () => {
    fake.enqueue({ status: 404 });
    const { error } = await run(request(model));
    expect(error).toMatchObject({ code: 'model_not_found', retryable: false });
  });

  it.each(['disconnect', 'error-event'] as const)(
    'fails a stream cut mid-way (%s) with streamed true, so not retryable',
    async (failWith) => {
      fake.enqueue({ text: ['one ', 'two ', 'three'], failAfterDeltas: 2, failWith });
      const { parts, error } = await run(request(model));
      expect(
        parts.filter((p) => p.type === 'text_delta').map((p) => p.type === 'text_delta' && p.delta),
      ).toEqual(['one ', 'two ']);
      expect(parts.some((p) => p.type === 'finish')).toBe(false);
      expect(error).toBeInstanceOf(ModelError);
      expect(error).toMatchObject({ code: 'provider_error', details: { streamed: true } });
      expect(error?.retryable).toBe(false);
    },
  );

  it('ends with ModelError aborted when the signal fires mid-stream', async () => {
    fake.enqueue({ text: ['a', 'b', 'c', 'd', 'e'], eventDelayMs: 30 });
    const controller = new AbortController();
    const parts: ModelStreamPart[] = [];
    let caught: unknown;
    try {
      for await (const part of gateway.stream(request(model, { signal: controller.signal }))) {
        parts.push(part);
        if (part.type === 'text_delta') controller.abort();
      }
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ code: 'aborted', details: { streamed: true } });
    expect(parts.some((p) => p.type === 'finish')).toBe(false);
  });

  it('fails a refused connection as a retryable provider_error', async () => {
    const closed = await FakeLlmServer.start();
    const deadUrl = closed.baseUrl;
    await closed.close();
    const dead = { apiKey: 'test-key', baseUrl: deadUrl };
    const deadGateway = createModelGateway({
      providers: { anthropic: dead, openai: dead, openaiCompatible: dead },
    });
    const { parts, error } = await run(request(model), deadGateway);
    expect(parts).toEqual([]);
    expect(error).toMatchObject({ code: 'provider_error', retryable: true, details: { streamed: false } });
  });
});

describe('URLs a tenant gave, through the SSRF guard', () => {
  let files: Server;
  let fileUrl: string;
  let hits = 0;
  const IMAGE = Buffer.from('not really a png');

  beforeAll(async () => {
    files = createServer((_req, res) => {
      hits++;
      res.writeHead(200, { 'content-type': 'image/png' }).end(IMAGE);
    });
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
    fileUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}/cat.png`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => files.close(() => resolve()));
  });

  beforeEach(() => {
    hits = 0;
  });

  const REFUSED = 'refused: 127.0.0.1 is a loopback, private, link-local or reserved address';
  const withAttachment = () =>
    request('openai-compatible:llama3:8b', {
      tools: [],
      messages: [
        userMessage([
          { type: 'text', text: 'What is this?' },
          { type: 'attachment', mediaType: 'image/png', url: fileUrl },
        ]),
      ],
    });
  const gatewayFor = (targets?: TargetPolicy) => {
    const configured = { apiKey: 'test-key', baseUrl: fake.baseUrl };
    return createModelGateway({
      providers: { anthropic: configured, openai: configured, openaiCompatible: configured },
      ...(targets ? { targets: { tenantUrls: targets, webhooks: targets } } : {}),
    });
  };

  it('refuses to download an attachment URL on a private address (target_refused, nothing fetched or sent)', async () => {
    const { parts, error } = await run(withAttachment(), gatewayFor());
    expect(parts).toEqual([]);
    expect(error).toMatchObject({
      code: 'target_refused',
      retryable: false,
      message: `attachment URL ${REFUSED}`,
    });
    expect(hits).toBe(0);
    expect(fake.requests).toEqual([]);
  });

  it('downloads it where the operator allows, and sends it inline', async () => {
    fake.enqueue({ text: ['A cat.'] });
    const { error } = await run(withAttachment(), gatewayFor(TargetPolicy.allowing(['127.0.0.1'])));
    expect(error).toBeUndefined();
    expect(hits).toBe(1);
    expect(JSON.stringify(fake.lastRequest().body)).toContain(IMAGE.toString('base64'));
  });

  it.each(PROVIDERS)(
    '$model: a tenant’s own base URL on a private address is refused at connect',
    async ({ model }) => {
      const own = { apiKey: 'tenant-key', baseUrl: fake.baseUrl };
      const { parts, error } = await run(request(model, { credentials: own }), gatewayFor());
      expect(parts).toEqual([]);
      expect(error).toMatchObject({
        code: 'target_refused',
        retryable: false,
        message: `model provider URL ${REFUSED}`,
      });
      expect(fake.requests).toEqual([]);
      // The deployment's own base URL (the same server) is the operator's: not guarded.
      fake.enqueue({ text: ['operator'] });
      expect((await run(request(model), gatewayFor())).error).toBeUndefined();
      // Allowed by the operator: the tenant's key goes through.
      fake.enqueue({ text: ['tenant'] });
      const allowed = await run(
        request(model, { credentials: own }),
        gatewayFor(TargetPolicy.allowing(['127.0.0.1'])),
      );
      expect(allowed.error).toBeUndefined();
      expect(
        fake.lastRequest().headers[model.startsWith('anthropic') ? 'x-api-key' : 'authorization'],
      ).toContain('tenant-key');
    },
  );
});
