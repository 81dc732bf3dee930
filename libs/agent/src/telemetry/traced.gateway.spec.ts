// The `chat {model}` span and the GenAI client metrics of a model call, read with the SDK's in-memory exporter and
// metric reader: the conventions' attributes, message content only when opted in, the tenant on metrics only when
// opted in, a failed call's error type; nothing wrapped when nothing records.

import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { configureTelemetry } from '@canopy/common';
import { emptyUsage, userMessage, type Message } from '@canopy/core';
import { InMemoryTelemetry } from '@canopy/testing';
import { MockGateway } from '../model/mock.gateway';
import type { ModelGateway, ModelRequest, ModelStreamPart } from '../model/model-gateway.port';
import { TracedGateway } from './traced.gateway';

const telemetry = InMemoryTelemetry.start();
afterAll(() => telemetry.shutdown());
afterEach(async () => {
  await telemetry.reset();
  configureTelemetry({ captureMessageContent: false, metricsTenant: false, metrics: true });
});

const gateway = new TracedGateway(new MockGateway());

function request(
  script: unknown[],
  messages: Message[] = [userMessage('what is the weather in Paris')],
): ModelRequest {
  return {
    model: 'mock:script',
    system: 'be brief',
    messages,
    tools: [],
    opts: { script, maxTokens: 100, temperature: 0.5 },
    attempt: 0,
    signal: new AbortController().signal,
    tenantId: '00000000-0000-4000-8000-000000000001',
  };
}

async function drain(stream: AsyncIterable<ModelStreamPart>): Promise<ModelStreamPart[]> {
  const parts: ModelStreamPart[] = [];
  for await (const part of stream) {
    parts.push(part);
    if (part.type === 'finish') break;
  }
  return parts;
}

describe('TracedGateway', () => {
  it('makes a chat span with the GenAI attributes of the call, its finish and its usage', async () => {
    await drain(gateway.stream(request([{ text: 'sunny and mild today' }])));
    const [span] = await telemetry.spans();
    expect(span!.name).toBe('chat script');
    expect(span!.kind).toBe(SpanKind.CLIENT);
    expect(span!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'mock',
      'gen_ai.request.model': 'script',
      'gen_ai.response.model': 'script',
      'gen_ai.request.max_tokens': 100,
      'gen_ai.request.temperature': 0.5,
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.output_tokens': 4,
      'gen_ai.usage.cache_read.input_tokens': 0,
    });
    expect(span!.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    // No message content unless the operator opted in.
    expect(span!.attributes['gen_ai.input.messages']).toBeUndefined();
    expect(span!.attributes['gen_ai.output.messages']).toBeUndefined();
    expect(span!.attributes['gen_ai.system_instructions']).toBeUndefined();
  });

  it('names the model the provider says answered, and its response id', async () => {
    const answering: ModelGateway = {
      check: () => null,
      // eslint-disable-next-line @typescript-eslint/require-await -- a stream of one part, nothing to wait for
      async *stream(): AsyncIterable<ModelStreamPart> {
        yield {
          type: 'finish',
          message: { role: 'assistant', content: [{ type: 'text', text: 'hi' }], timestamp: 0 },
          usage: emptyUsage(),
          finishReason: 'stop',
          response: { id: 'resp_42', model: 'script-2026-12-01' },
        };
      },
    };
    await drain(new TracedGateway(answering).stream(request([])));
    const [span] = await telemetry.spans();
    expect(span!.attributes).toMatchObject({
      'gen_ai.request.model': 'script',
      'gen_ai.response.model': 'script-2026-12-01',
      'gen_ai.response.id': 'resp_42',
    });
  });

  it('records the messages, the system prompt and the reply when content capture is on', async () => {
    configureTelemetry({ captureMessageContent: true });
    await drain(
      gateway.stream(
        request([{ text: 'calling', toolCalls: [{ name: 'weather', input: { city: 'Paris' } }] }]),
      ),
    );
    const [span] = await telemetry.spans();
    expect(JSON.parse(String(span!.attributes['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'what is the weather in Paris' }] },
    ]);
    expect(JSON.parse(String(span!.attributes['gen_ai.system_instructions']))).toEqual([
      { type: 'text', content: 'be brief' },
    ]);
    const [output] = JSON.parse(String(span!.attributes['gen_ai.output.messages'])) as Array<{
      role: string;
      parts: Array<Record<string, unknown>>;
      finish_reason: string;
    }>;
    expect(output).toMatchObject({ role: 'assistant', finish_reason: 'tool_call' });
    expect(output!.parts).toContainEqual(
      expect.objectContaining({ type: 'tool_call', name: 'weather', arguments: { city: 'Paris' } }),
    );
    expect(span!.attributes['gen_ai.response.finish_reasons']).toEqual(['tool_call']);
  });

  it('records a failed call: error.type, an error status, the duration metric with the error', async () => {
    await expect(drain(gateway.stream(request([{ error: 'upstream exploded' }])))).rejects.toThrow(
      'upstream exploded',
    );
    const [span] = await telemetry.spans();
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    expect(span!.attributes['error.type']).toBe('provider_error');
    const metrics = await telemetry.metrics();
    expect(metrics.get('gen_ai.client.operation.duration')?.[0]?.attributes).toMatchObject({
      'error.type': 'provider_error',
    });
    expect(metrics.get('gen_ai.client.token.usage')).toBeUndefined();
  });

  it('records the GenAI client metrics: tokens by type, duration, time to first chunk, time per chunk', async () => {
    await drain(gateway.stream(request([{ text: 'one two three four five', delayMs: 5 }])));
    const metrics = await telemetry.metrics();
    const tokens = metrics.get('gen_ai.client.token.usage')!;
    expect(tokens.map((p) => p.attributes['gen_ai.token.type']).sort()).toEqual(['input', 'output']);
    const output = tokens.find((p) => p.attributes['gen_ai.token.type'] === 'output')!;
    expect(output.value).toMatchObject({ count: 1, sum: 5 });
    expect(output.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'mock',
      'gen_ai.request.model': 'script',
      'gen_ai.response.model': 'script',
      'gen_ai.token.type': 'output',
    });
    expect(metrics.get('gen_ai.client.operation.duration')?.[0]?.value).toMatchObject({ count: 1 });
    expect(metrics.get('gen_ai.client.operation.time_to_first_chunk')?.[0]?.value).toMatchObject({
      count: 1,
    });
    // Five words stream as five chunks: four gaps after the first.
    const perChunk = metrics.get('gen_ai.client.operation.time_per_output_chunk')?.[0]?.value as {
      count: number;
      min: number;
    };
    expect(perChunk.count).toBe(4);
    expect(perChunk.min).toBeGreaterThan(0.003);
  });

  it('puts the tenant on metrics only when the operator opts in', async () => {
    await drain(gateway.stream(request([{ text: 'hi' }])));
    let metrics = await telemetry.metrics();
    expect(metrics.get('gen_ai.client.token.usage')![0]!.attributes['canopy.tenant.id']).toBeUndefined();
    await telemetry.reset();
    configureTelemetry({ metricsTenant: true });
    await drain(gateway.stream(request([{ text: 'hi' }])));
    metrics = await telemetry.metrics();
    expect(
      metrics
        .get('gen_ai.client.token.usage')!
        .some((p) => p.attributes['canopy.tenant.id'] === '00000000-0000-4000-8000-000000000001'),
    ).toBe(true);
  });

  it('hands the inner stream back untouched when no span records and no metrics are exported', () => {
    configureTelemetry({ metrics: false });
    const inner = new MockGateway().stream(request([{ text: 'x' }]));
    const traced = new TracedGateway({ check: () => null, stream: () => inner });
    // As in a process without OpenTelemetry: no tracer provider, so spans do not record.
    const provider = trace.getTracerProvider();
    trace.disable();
    try {
      expect(traced.stream(request([]))).toBe(inner);
    } finally {
      trace.setGlobalTracerProvider(provider);
    }
  });
});
