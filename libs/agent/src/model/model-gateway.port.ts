// The model port: one streaming call to a language model, in Canopy's own message and event types. Adapters:
// the AI SDK providers (anthropic:, openai:, openai-compatible:) and the built-in mock:echo / mock:script.
// Retrying is the caller's decision (ModelError.retryable); the gateway makes exactly one attempt.

import type { Message, ToolUseBlock, Usage } from '@canopy/core';

export interface ModelToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the tool's input. */
  inputSchema: Record<string, unknown>;
}

export interface ModelRequest {
  /** "provider:model", e.g. "anthropic:claude-sonnet-4-5", "mock:echo". */
  model: string;
  system: string | null;
  messages: Message[];
  tools: ModelToolSpec[];
  /**
   * Session options. Understood: temperature, maxTokens, topP (all providers); script (mock:script),
   * delayMs (mock:echo, per word), numbered (mock:echo: "Echo #n:", n counting replies to the same
   * messages); providerOptions (passed to the AI SDK as is).
   */
  opts: Record<string, unknown>;
  /** Failed attempts of this model step so far (0 for the first attempt; a retry counts up). */
  attempt: number;
  signal: AbortSignal;
  /** The tenant the call is for: its own provider key (bring your own key) is used before the deployment's. */
  tenantId?: string;
  /** Set by the tenant-credentials gateway: the tenant's own key (and base URL) for this call's provider. */
  credentials?: { apiKey: string; baseUrl: string | null };
}

/** What a model check knows of the caller: the providers its tenant brought its own key for. */
export interface ModelCheckContext {
  tenantProviders?: ReadonlySet<string>;
}

export type FinishReason = 'stop' | 'tool_use' | 'length' | 'content_filter' | 'error' | 'other';

/** Parts stream in order; `index` is the block's position in the assistant message being built. */
export type ModelStreamPart =
  | { type: 'text_start'; index: number }
  | { type: 'text_delta'; index: number; delta: string }
  | { type: 'text_end'; index: number }
  | { type: 'thinking_start'; index: number }
  | { type: 'thinking_delta'; index: number; delta: string }
  | { type: 'thinking_end'; index: number; signature?: string }
  | { type: 'tool_use_start'; index: number; id: string; name: string }
  | { type: 'tool_use_delta'; index: number; id: string; delta: string }
  | { type: 'tool_use_end'; index: number; block: ToolUseBlock }
  /**
   * Always last on success: the complete assistant message and the call's usage; `response`, what the provider said
   * of its answer when it said it (its id, the model that answered, which may be a dated version of the one asked).
   */
  | { type: 'finish'; message: Message; usage: Usage; finishReason: FinishReason; response?: ModelResponse };

/** The provider's own account of an answer. */
export interface ModelResponse {
  id?: string;
  model?: string;
}

/**
 * `target_refused`: the SSRF guard refused a URL a tenant gave (its provider base URL, an attachment URL);
 * `context_length_exceeded`: the provider said the request is longer than the model's window.
 */
export type ModelErrorCode =
  | 'rate_limited'
  | 'context_length_exceeded'
  | 'provider_error'
  | 'model_not_found'
  | 'bad_model_request'
  | 'not_configured'
  | 'target_refused'
  | 'aborted';

export class ModelError extends Error {
  constructor(
    readonly code: ModelErrorCode,
    message: string,
    readonly details: {
      /** True for 429 and 5xx (and connection failures) that happened before any part streamed. */
      retryable: boolean;
      status?: number;
      /** From a Retry-After header, when the provider sent one. */
      retryAfterMs?: number;
      /** Whether parts had already been streamed when it failed. */
      streamed: boolean;
    },
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ModelError';
  }

  get retryable(): boolean {
    return this.details.retryable && !this.details.streamed;
  }
}

export interface ModelGateway {
  /**
   * Streams one model call. Failures are thrown as ModelError (before or during the stream); an aborted
   * signal ends the stream with ModelError('aborted').
   */
  stream(request: ModelRequest): AsyncIterable<ModelStreamPart>;
  /** Checks a "provider:model" string: null when usable, else why not (unknown provider, missing key). */
  check(model: string, context?: ModelCheckContext): string | null;
}

export const MODEL_GATEWAY = Symbol('MODEL_GATEWAY');

/**
 * A stream that fails with `error` when read (not when made: callers see a gateway's failures while they iterate).
 * Gateways in front of others return the inner stream itself, or this, rather than wrap it in one more async
 * generator: each level of `yield*` costs every streamed part a promise and a turn of the microtask queue.
 */
export function failedStream(error: Error): AsyncIterable<ModelStreamPart> {
  return {
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(error) }),
  };
}
