// Real model providers through the AI SDK: anthropic: (Messages API), openai: (Responses API) and
// openai-compatible: (Chat Completions at a configured base URL). One attempt per call (maxRetries 0, the caller
// retries); tools are declared without `execute`, so tool calls come back to the caller as tool_use blocks.
// URLs a tenant gave pass the SSRF guard on every connection: its own provider key's base URL, and the attachment
// URLs Canopy downloads. The deployment's own provider URLs (ANTHROPIC_BASE_URL, ...) are the operator's.

import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  jsonSchema,
  streamText,
  tool,
  type JSONSchema7,
  type LanguageModel,
  type LanguageModelUsage,
  type ToolSet,
} from 'ai';
import { guardedFetch, TargetPolicy, type CanopyConfig } from '@canopy/common';
import { guardedDownload } from './guarded-download';
import { toCanopyUsage, toFinishReason, toModelPrompt, type ThinkingReplay } from './message-mapping';
import {
  ModelError,
  type FinishReason,
  type ModelCheckContext,
  type ModelGateway,
  type ModelRequest,
  type ModelResponse,
  type ModelStreamPart,
  type ModelToolSpec,
} from './model-gateway.port';
import { isModelProblem, parseModelId, type AiSdkProvider, type ModelProblem } from './model-id';
import { abortedError, toModelError } from './provider-errors';
import { StreamPartMapper } from './stream-mapping';

/** The providers' own endpoints, passed explicitly so the AI SDK never falls back to reading process.env. */
const DEFAULT_BASE_URLS = {
  anthropic: 'https://api.anthropic.com/v1',
  openai: 'https://api.openai.com/v1',
} as const;

/** Which thinking blocks each provider is sent back (message-mapping.ts); the token counter counts the same. */
export const THINKING_REPLAY: Readonly<Record<AiSdkProvider, ThinkingReplay>> = {
  anthropic: 'signed',
  openai: 'none',
  'openai-compatible': 'all',
};

type ProvidersConfig = CanopyConfig['providers'];

export class AiSdkGateway implements ModelGateway {
  private readonly factories = new Map<AiSdkProvider, (modelId: string) => LanguageModel>();
  /** fetches for URLs a tenant gave: every connection checked against the tenant URL policy. */
  private readonly providerFetch: typeof globalThis.fetch;
  private readonly attachmentFetch: typeof globalThis.fetch;

  constructor(
    private readonly providers: ProvidersConfig,
    tenantTargets: TargetPolicy = TargetPolicy.publicOnly,
  ) {
    this.providerFetch = guardedFetch(tenantTargets, 'model provider URL');
    this.attachmentFetch = guardedFetch(tenantTargets, 'attachment URL');
  }

  check(model: string, context?: ModelCheckContext): string | null {
    const id = this.resolve(model, context?.tenantProviders);
    return isModelProblem(id) ? id.message : null;
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamPart> {
    const own = request.credentials;
    const id = this.resolve(request.model, own ? new Set([parseProvider(request.model)]) : undefined);
    if (isModelProblem(id)) throw new ModelError(id.code, id.message, { retryable: false, streamed: false });
    if (request.signal.aborted) throw abortedError(false);

    const mapper = new StreamPartMapper();
    let streamed = false;
    let finish: { reason: FinishReason; usage: LanguageModelUsage | undefined } | undefined;
    let response: ModelResponse | undefined;
    try {
      const prompt = toModelPrompt(request.system, request.messages, {
        thinking: THINKING_REPLAY[id.provider],
      });
      const { opts } = request;
      const result = streamText({
        model: own ? this.createFactory(id.provider, own)(id.name) : this.languageModel(id.provider, id.name),
        system: prompt.system,
        messages: prompt.messages,
        tools: toToolSet(request.tools),
        maxRetries: 0,
        abortSignal: request.signal,
        experimental_download: guardedDownload(this.attachmentFetch, request.signal),
        temperature: numberOpt(opts.temperature),
        maxOutputTokens: numberOpt(opts.maxTokens),
        topP: numberOpt(opts.topP),
        providerOptions: isRecord(opts.providerOptions)
          ? (opts.providerOptions as Parameters<typeof streamText>[0]['providerOptions'])
          : undefined,
        // Errors arrive as `error` parts of fullStream; without a handler the AI SDK would also log them.
        onError: () => {},
      });
      for await (const part of result.fullStream) {
        if (part.type === 'error') throw toModelError(part.error, streamed, request.signal);
        if (part.type === 'abort') throw abortedError(streamed);
        if (part.type === 'finish-step' || part.type === 'finish') {
          const usage = part.type === 'finish' ? part.totalUsage : part.usage;
          finish = { reason: toFinishReason(part.finishReason), usage };
          if (part.type === 'finish-step') response = { id: part.response.id, model: part.response.modelId };
        }
        for (const out of mapper.map(part)) {
          streamed = true;
          yield out;
        }
      }
    } catch (error) {
      throw toModelError(error, streamed, request.signal);
    }
    if (request.signal.aborted) throw abortedError(streamed);
    if (!finish) {
      throw new ModelError('provider_error', 'the model stream ended without finishing', {
        retryable: true,
        streamed,
      });
    }
    yield* mapper.finish(toCanopyUsage(finish.usage), finish.reason, response);
  }

  /** The provider and model a string names, or why it cannot be used. */
  private resolve(
    model: string,
    tenantProviders?: ReadonlySet<string>,
  ): { provider: AiSdkProvider; name: string } | ModelProblem {
    const id = parseModelId(model);
    if (isModelProblem(id)) return id;
    if (id.provider === 'mock') {
      return { code: 'model_not_found', message: `"${model}" is not an AI SDK model` };
    }
    // A tenant's own key configures the provider for that tenant.
    if (tenantProviders?.has(id.provider)) return { provider: id.provider, name: id.name };
    return this.configProblem(id.provider) ?? { provider: id.provider, name: id.name };
  }

  private configProblem(provider: AiSdkProvider): ModelProblem | null {
    const p = this.providers;
    if (provider === 'anthropic' && !p.anthropic.apiKey) {
      return notConfigured('anthropic', 'ANTHROPIC_API_KEY');
    }
    if (provider === 'openai' && !p.openai.apiKey) return notConfigured('openai', 'OPENAI_API_KEY');
    if (provider === 'openai-compatible' && !p.openaiCompatible.baseUrl) {
      return notConfigured('openai-compatible', 'OPENAI_COMPATIBLE_BASE_URL');
    }
    return null;
  }

  private languageModel(provider: AiSdkProvider, name: string): LanguageModel {
    let factory = this.factories.get(provider);
    if (!factory) {
      factory = this.createFactory(provider);
      this.factories.set(provider, factory);
    }
    return factory(name);
  }

  /**
   * A provider's factory: the deployment's key, or a tenant's own (own.baseUrl over the deployment's, and then
   * called through the guarded fetch).
   */
  private createFactory(
    provider: AiSdkProvider,
    own?: { apiKey: string; baseUrl: string | null },
  ): (modelId: string) => LanguageModel {
    const p = this.providers;
    const fetch = own?.baseUrl ? { fetch: this.providerFetch } : {};
    switch (provider) {
      case 'anthropic':
        return createAnthropic({
          apiKey: own?.apiKey ?? p.anthropic.apiKey ?? undefined,
          baseURL: own?.baseUrl ?? p.anthropic.baseUrl ?? DEFAULT_BASE_URLS.anthropic,
          ...fetch,
        });
      case 'openai':
        return createOpenAI({
          apiKey: own?.apiKey ?? p.openai.apiKey ?? undefined,
          baseURL: own?.baseUrl ?? p.openai.baseUrl ?? DEFAULT_BASE_URLS.openai,
          ...fetch,
        });
      case 'openai-compatible':
        return createOpenAICompatible({
          name: 'openai-compatible',
          baseURL: own?.baseUrl ?? p.openaiCompatible.baseUrl ?? '',
          apiKey: own?.apiKey ?? p.openaiCompatible.apiKey ?? undefined,
          ...fetch,
          // Ask for usage in the stream (stream_options.include_usage), which OpenAI-style servers omit otherwise.
          includeUsage: true,
        });
    }
  }
}

function notConfigured(provider: AiSdkProvider, variable: string): ModelProblem {
  return {
    code: 'not_configured',
    message: `model provider "${provider}" is not configured (set ${variable})`,
  };
}

/** Tools as JSON-schema tools without `execute`: the AI SDK returns their calls instead of running them. */
function toToolSet(tools: readonly ModelToolSpec[]): ToolSet | undefined {
  if (tools.length === 0) return undefined;
  const set: ToolSet = {};
  for (const t of tools) {
    set[t.name] = tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema as JSONSchema7) });
  }
  return set;
}

function numberOpt(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The provider part of "provider:model" (the part before the first colon). */
function parseProvider(model: string): string {
  return model.slice(0, Math.max(0, model.indexOf(':')));
}
