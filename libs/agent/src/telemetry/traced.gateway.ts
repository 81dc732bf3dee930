// The model calls as OpenTelemetry sees them: a `chat {model}` span per call (a child of the run's span, the
// attributes of the GenAI conventions: provider, request and response model, finish reasons, input, output and
// cached tokens; message content only when the operator opted in) and the GenAI client metrics. A gateway in front
// of the others; when neither a span is recorded nor metrics exported, it hands the inner stream back untouched.

import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { GEN_AI, CANOPY_ATTR, SPAN, canopyTracer, recordModelCall, telemetryOptions } from '@canopy/common';
import {
  ModelError,
  type FinishReason,
  type ModelCheckContext,
  type ModelGateway,
  type ModelRequest,
  type ModelStreamPart,
} from '../model/model-gateway.port';
import { messagesJson, systemJson } from './gen-ai-content';

/** Canopy's finish reasons in the conventions' words. */
const FINISH_REASONS: Record<FinishReason, string> = {
  stop: 'stop',
  tool_use: 'tool_call',
  length: 'length',
  content_filter: 'content_filter',
  error: 'error',
  other: 'other',
};

/** Parts that are streamed output (the chunks time to first chunk and time per chunk measure). */
const OUTPUT_CHUNKS = new Set<ModelStreamPart['type']>([
  'text_delta',
  'thinking_delta',
  'tool_use_start',
  'tool_use_delta',
]);

export class TracedGateway implements ModelGateway {
  constructor(private readonly inner: ModelGateway) {}

  check(model: string, context?: ModelCheckContext): string | null {
    return this.inner.check(model, context);
  }

  stream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
    const colon = request.model.indexOf(':');
    const provider = colon > 0 ? request.model.slice(0, colon) : request.model;
    const model = colon > 0 ? request.model.slice(colon + 1) : request.model;
    const options = telemetryOptions();
    const span = canopyTracer().startSpan(`${SPAN.chat} ${model}`, {
      kind: SpanKind.CLIENT,
      attributes: requestAttributes(request, provider, model),
    });
    if (!span.isRecording() && !options.metrics) {
      span.end();
      return this.inner.stream(request);
    }
    if (span.isRecording() && options.captureMessageContent) {
      if (request.system) span.setAttribute(GEN_AI.systemInstructions, systemJson(request.system));
      span.setAttribute(GEN_AI.inputMessages, messagesJson(request.messages));
    }
    return observed(this.inner, request, span, { provider, model, options });
  }
}

function requestAttributes(request: ModelRequest, provider: string, model: string): Attributes {
  const attributes: Attributes = {
    [GEN_AI.operationName]: 'chat',
    [GEN_AI.providerName]: provider,
    [GEN_AI.requestModel]: model,
    [CANOPY_ATTR.attempt]: request.attempt,
  };
  const { maxTokens, temperature, topP } = request.opts;
  if (typeof maxTokens === 'number') attributes[GEN_AI.requestMaxTokens] = maxTokens;
  if (typeof temperature === 'number') attributes[GEN_AI.requestTemperature] = temperature;
  if (typeof topP === 'number') attributes[GEN_AI.requestTopP] = topP;
  return attributes;
}

/** The inner stream, read inside the span's context, its parts timed and its finish recorded. */
function observed(
  inner: ModelGateway,
  request: ModelRequest,
  span: Span,
  call: { provider: string; model: string; options: ReturnType<typeof telemetryOptions> },
): AsyncIterable<ModelStreamPart> {
  const spanContext = trace.setSpan(context.active(), span);
  return {
    [Symbol.asyncIterator]: () => {
      const parts = context.with(spanContext, () => inner.stream(request)[Symbol.asyncIterator]());
      const started = performance.now();
      let firstChunk: number | null = null;
      let lastChunk = 0;
      const gaps: number[] = [];
      let ended = false;
      const end = (outcome: { part: Extract<ModelStreamPart, { type: 'finish' }> } | { error: unknown }) => {
        if (ended) return;
        ended = true;
        const durationS = (performance.now() - started) / 1000;
        // The model that answered, as the provider named it (a dated version of the one asked, or a router's pick).
        const response = 'part' in outcome ? outcome.part.response : undefined;
        const figures = {
          provider: call.provider,
          requestModel: call.model,
          responseModel: response?.model || call.model,
          tenantId: request.tenantId,
          durationS,
          firstChunkS: firstChunk === null ? null : (firstChunk - started) / 1000,
          chunkGapsS: gaps,
        };
        if ('part' in outcome) {
          const { usage, finishReason, message } = outcome.part;
          if (response?.id) span.setAttribute(GEN_AI.responseId, response.id);
          span.setAttributes({
            [GEN_AI.responseModel]: figures.responseModel,
            [GEN_AI.responseFinishReasons]: [FINISH_REASONS[finishReason]],
            [GEN_AI.inputTokens]: usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens,
            [GEN_AI.outputTokens]: usage.outputTokens,
            [GEN_AI.cacheReadTokens]: usage.cacheReadTokens,
            [GEN_AI.cacheCreationTokens]: usage.cacheWriteTokens,
          });
          if (call.options.captureMessageContent && span.isRecording()) {
            span.setAttribute(GEN_AI.outputMessages, messagesJson([message], FINISH_REASONS[finishReason]));
          }
          recordModelCall({
            ...figures,
            inputTokens: usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens,
            outputTokens: usage.outputTokens,
          });
        } else {
          const errorType = errorTypeOf(outcome.error);
          span.setAttribute(GEN_AI.errorType, errorType);
          if (errorType !== 'aborted') {
            span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(outcome.error) });
          }
          recordModelCall({ ...figures, inputTokens: null, outputTokens: null, errorType });
        }
        span.end();
      };
      return {
        next: async () => {
          let result: IteratorResult<ModelStreamPart>;
          try {
            result = await context.with(spanContext, () => parts.next());
          } catch (error) {
            end({ error });
            throw error;
          }
          if (result.done) {
            end({ error: new Error('the model stream ended without finishing') });
            return result;
          }
          const part = result.value;
          if (OUTPUT_CHUNKS.has(part.type)) {
            const now = performance.now();
            if (firstChunk === null) firstChunk = now;
            else if (call.options.metrics) gaps.push((now - lastChunk) / 1000);
            lastChunk = now;
          } else if (part.type === 'finish') {
            end({ part });
          }
          return result;
        },
        return: async (value?: unknown) => {
          end({
            error: new ModelError('aborted', 'the call was left', { retryable: false, streamed: true }),
          });
          return (await parts.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    },
  };
}

function errorTypeOf(error: unknown): string {
  if (error instanceof ModelError) return error.code;
  return error instanceof Error ? error.name : 'error';
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
