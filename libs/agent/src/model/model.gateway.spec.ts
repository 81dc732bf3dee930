import { userMessage } from '@canopy/core';
import { ModelError, type ModelRequest, type ModelStreamPart } from './model-gateway.port';
import { createModelGateway } from './model.gateway';

type Providers = Parameters<typeof createModelGateway>[0]['providers'];

const none = { apiKey: null, baseUrl: null };
const unconfigured: Providers = { anthropic: none, openai: none, openaiCompatible: none };

function request(model: string): ModelRequest {
  return {
    model,
    system: null,
    messages: [userMessage('hi', 0)],
    tools: [],
    opts: {},
    attempt: 0,
    signal: new AbortController().signal,
  };
}

async function firstError(stream: AsyncIterable<ModelStreamPart>): Promise<ModelError | undefined> {
  try {
    for await (const _ of stream) {
      // drain
    }
  } catch (error) {
    if (error instanceof ModelError) return error;
    throw error;
  }
  return undefined;
}

describe('ModelRouter.check', () => {
  it('accepts the mocks without any configuration', () => {
    const gateway = createModelGateway({ providers: unconfigured });
    expect(gateway.check('mock:echo')).toBeNull();
    expect(gateway.check('mock:script')).toBeNull();
  });

  it('names what is wrong with a model string', () => {
    const gateway = createModelGateway({ providers: unconfigured });
    expect(gateway.check('gpt-4o')).toMatch(/provider:model/);
    expect(gateway.check('acme:big')).toMatch(/unknown model provider "acme"/);
    expect(gateway.check('anthropic:')).toMatch(/names no model/);
    expect(gateway.check('anthropic:claude-sonnet-4-5')).toMatch(/ANTHROPIC_API_KEY/);
    expect(gateway.check('openai:gpt-5')).toMatch(/OPENAI_API_KEY/);
    expect(gateway.check('openai-compatible:llama3')).toMatch(/OPENAI_COMPATIBLE_BASE_URL/);
    expect(gateway.check('mock:other')).toMatch(/unknown mock model/);
  });

  it('accepts configured providers (openai-compatible needs only a base URL)', () => {
    const gateway = createModelGateway({
      providers: {
        anthropic: { apiKey: 'sk-ant', baseUrl: null },
        openai: { apiKey: 'sk', baseUrl: null },
        openaiCompatible: { apiKey: null, baseUrl: 'http://127.0.0.1:1/v1' },
      },
    });
    expect(gateway.check('anthropic:claude-sonnet-4-5')).toBeNull();
    expect(gateway.check('openai:gpt-5')).toBeNull();
    expect(gateway.check('openai-compatible:llama3:8b')).toBeNull();
  });
});

describe('ModelRouter.stream', () => {
  it('routes mock models to the mock gateway', async () => {
    const parts: ModelStreamPart[] = [];
    for await (const part of createModelGateway({ providers: unconfigured }).stream(request('mock:echo'))) {
      parts.push(part);
    }
    expect(parts.at(-1)).toMatchObject({ type: 'finish', message: { content: [{ text: 'Echo: hi' }] } });
  });

  it('fails with not_configured, model_not_found or bad_model_request before streaming', async () => {
    const gateway = createModelGateway({ providers: unconfigured });
    expect(await firstError(gateway.stream(request('anthropic:claude-sonnet-4-5')))).toMatchObject({
      code: 'not_configured',
      retryable: false,
      details: { streamed: false },
    });
    expect((await firstError(gateway.stream(request('acme:x'))))?.code).toBe('model_not_found');
    expect((await firstError(gateway.stream(request('mock:nope'))))?.code).toBe('model_not_found');
    expect((await firstError(gateway.stream(request('openai:'))))?.code).toBe('bad_model_request');
  });
});
