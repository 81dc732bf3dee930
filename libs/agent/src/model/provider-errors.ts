// What a failed provider call means to Canopy: AI SDK and network errors become ModelErrors with a code and
// the retryable rule (429, 5xx and connection failures are retryable; other 4xx and bad prompts are not). A
// connection the SSRF guard refused is `target_refused`, never retried.

import {
  APICallError,
  InvalidArgumentError,
  InvalidDataContentError,
  InvalidMessageRoleError,
  InvalidPromptError,
  LoadAPIKeyError,
  MessageConversionError,
  MissingToolResultsError,
  NoSuchModelError,
  RetryError,
  UnsupportedFunctionalityError,
} from 'ai';
import { targetRefusalIn } from '@canopy/common';
import { ModelError } from './model-gateway.port';

/** Maps any error of a provider call; `streamed` tells whether parts had been yielded before it. */
export function toModelError(error: unknown, streamed: boolean, signal?: AbortSignal): ModelError {
  if (error instanceof ModelError) return error;
  if (signal?.aborted || isAbortError(error)) return abortedError(streamed, error);
  const cause = error;
  if (RetryError.isInstance(error)) error = error.lastError;
  const refused = targetRefusalIn(error);
  if (refused)
    return new ModelError('target_refused', refused.message, { retryable: false, streamed }, { cause });
  const fail = (
    code: ModelError['code'],
    message: string,
    retryable: boolean,
    extra: { status?: number; retryAfterMs?: number } = {},
  ) => new ModelError(code, message, { retryable, streamed, ...extra }, { cause });

  if (APICallError.isInstance(error)) {
    const status = error.statusCode;
    const message = providerMessage(error);
    // No status: the request never got a response. Below 400: a successful response whose body then failed.
    if (status === undefined || status < 400) {
      return fail('provider_error', message, error.isRetryable || isConnectionError(error));
    }
    if (status === 429) {
      const after = retryAfterMs(error.responseHeaders);
      return fail('rate_limited', message, true, {
        status,
        ...(after !== undefined && { retryAfterMs: after }),
      });
    }
    if (status >= 500) return fail('provider_error', message, true, { status });
    if (status === 404) return fail('model_not_found', message, false, { status });
    if (saysContextTooLong(`${error.message} ${error.responseBody ?? ''}`)) {
      return fail('context_length_exceeded', message, false, { status });
    }
    return fail('bad_model_request', message, false, { status });
  }
  if (LoadAPIKeyError.isInstance(error)) return fail('not_configured', error.message, false);
  if (NoSuchModelError.isInstance(error)) return fail('model_not_found', error.message, false);
  if (
    InvalidPromptError.isInstance(error) ||
    InvalidArgumentError.isInstance(error) ||
    InvalidMessageRoleError.isInstance(error) ||
    InvalidDataContentError.isInstance(error) ||
    MissingToolResultsError.isInstance(error) ||
    MessageConversionError.isInstance(error) ||
    UnsupportedFunctionalityError.isInstance(error)
  ) {
    return fail('bad_model_request', error.message, false);
  }
  const streamError = asStreamErrorPayload(error);
  if (streamError) {
    // An error event inside an otherwise successful response (Anthropic `error`, OpenAI `{error}` chunks).
    const kind = `${streamError.type ?? ''} ${streamError.code ?? ''}`.toLowerCase();
    if (kind.includes('rate_limit')) return fail('rate_limited', streamError.message, true);
    if (saysContextTooLong(`${kind} ${streamError.message}`)) {
      return fail('context_length_exceeded', streamError.message, false);
    }
    if (kind.includes('invalid_request')) return fail('bad_model_request', streamError.message, false);
    return fail('provider_error', streamError.message, true);
  }
  if (isConnectionError(error)) {
    return fail('provider_error', `connection to the model provider failed: ${errorMessage(error)}`, true);
  }
  return fail('provider_error', errorMessage(error), false);
}

export function abortedError(streamed: boolean, cause?: unknown): ModelError {
  return new ModelError('aborted', 'the model call was aborted', { retryable: false, streamed }, { cause });
}

/**
 * Milliseconds to wait from a response's headers: `retry-after-ms` (OpenAI), else `retry-after` as seconds or
 * an HTTP date. Undefined when neither is present or readable.
 */
export function retryAfterMs(
  headers: Record<string, string> | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const header = (name: string) => {
    const value = Object.entries(headers)
      .find(([k]) => k.toLowerCase() === name)?.[1]
      ?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const ms = header('retry-after-ms');
  if (ms !== undefined && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Math.round(Number(ms));
  const after = header('retry-after');
  if (after === undefined) return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * How providers say a request is longer than the model's window: OpenAI's error code `context_length_exceeded`
 * and "maximum context length is N tokens" (also what vLLM and other OpenAI-compatible servers answer),
 * Anthropic's "prompt is too long", and the "context window" wording others use.
 */
const CONTEXT_TOO_LONG =
  /context_length_exceeded|maximum context length|prompt is too long|exceeds? (the )?(model'?s? )?context (window|length)|context window (is )?exceeded|too many tokens/i;

export function saysContextTooLong(text: string): boolean {
  return CONTEXT_TOO_LONG.test(text);
}

function providerMessage(error: APICallError): string {
  const status = error.statusCode === undefined ? '' : ` (HTTP ${error.statusCode})`;
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return `model provider error${status}: ${error.message}${cause}`;
}

/** By name, not class: fetch rejects with a DOMException, which may come from another realm. */
function isAbortError(error: unknown): boolean {
  const name = typeof error === 'object' && error !== null ? (error as { name?: unknown }).name : undefined;
  return name === 'AbortError' || name === 'ResponseAborted';
}

interface StreamErrorPayload {
  message: string;
  type?: string;
  code?: string;
}

function asStreamErrorPayload(error: unknown): StreamErrorPayload | undefined {
  if (typeof error !== 'object' || error === null || error instanceof Error) return undefined;
  const e = error as Record<string, unknown>;
  if (typeof e.message !== 'string') return undefined;
  return {
    message: e.message,
    type: typeof e.type === 'string' ? e.type : undefined,
    code: typeof e.code === 'string' || typeof e.code === 'number' ? String(e.code) : undefined,
  };
}

const NETWORK_CODES = /^(ECONN|EPIPE|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|UND_ERR)/;
const NETWORK_MESSAGES = /^(terminated|fetch failed|other side closed|socket hang up)$/i;

/** A fetch that failed or a body cut off (undici reports "terminated" with the socket error as its cause). */
function isConnectionError(error: unknown): boolean {
  let e: unknown = error;
  for (let depth = 0; depth < 5 && typeof e === 'object' && e !== null; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && NETWORK_CODES.test(code)) return true;
    if (typeof message === 'string' && NETWORK_MESSAGES.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}
