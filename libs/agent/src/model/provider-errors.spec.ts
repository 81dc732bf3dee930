import { APICallError, InvalidPromptError, RetryError } from 'ai';
import { TargetRefusedError } from '@canopy/common';
import { retryAfterMs, toModelError } from './provider-errors';

function apiError(statusCode: number | undefined, headers?: Record<string, string>, isRetryable = false) {
  return new APICallError({
    message: 'nope',
    url: 'http://x.test/v1/messages',
    requestBodyValues: {},
    statusCode,
    responseHeaders: headers,
    isRetryable,
  });
}

describe('toModelError', () => {
  it('makes a 429 a retryable rate_limited error with the wait from retry-after', () => {
    const error = toModelError(apiError(429, { 'retry-after': '3' }), false);
    expect(error).toMatchObject({
      code: 'rate_limited',
      retryable: true,
      details: { status: 429, retryAfterMs: 3_000, streamed: false },
    });
  });

  it('makes 5xx retryable provider errors', () => {
    expect(toModelError(apiError(500), false)).toMatchObject({ code: 'provider_error', retryable: true });
    expect(toModelError(apiError(529), false)).toMatchObject({ code: 'provider_error', retryable: true });
  });

  it('makes 404 model_not_found and other 4xx bad_model_request, neither retryable', () => {
    expect(toModelError(apiError(404), false)).toMatchObject({ code: 'model_not_found', retryable: false });
    expect(toModelError(apiError(400), false)).toMatchObject({
      code: 'bad_model_request',
      retryable: false,
      details: { status: 400 },
    });
    expect(toModelError(apiError(401), false).code).toBe('bad_model_request');
  });

  it('makes connection failures retryable provider errors', () => {
    const refused = apiError(undefined, undefined, true);
    expect(toModelError(refused, false)).toMatchObject({ code: 'provider_error', retryable: true });
    const cut = new TypeError('terminated', {
      cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
    });
    expect(toModelError(cut, false)).toMatchObject({ code: 'provider_error', retryable: true });
  });

  it('makes a connection the SSRF guard refused target_refused, never retryable, with the refusal as message', () => {
    const refused = new TargetRefusedError('127.0.0.1 is a loopback address', 'model provider URL');
    // As the AI SDK wraps a failed fetch: "Cannot connect to API", retryable, the refusal as its cause.
    const wrapped = new APICallError({
      message: 'Cannot connect to API: model provider URL refused: 127.0.0.1 is a loopback address',
      url: 'http://127.0.0.1:1/v1/chat/completions',
      requestBodyValues: {},
      cause: refused,
      isRetryable: true,
    });
    for (const error of [refused, wrapped]) {
      expect(toModelError(error, false)).toMatchObject({
        code: 'target_refused',
        retryable: false,
        message: 'model provider URL refused: 127.0.0.1 is a loopback address',
      });
    }
  });

  it('is never retryable once parts were streamed', () => {
    const error = toModelError(apiError(500), true);
    expect(error.details).toMatchObject({ retryable: true, streamed: true });
    expect(error.retryable).toBe(false);
  });

  it('makes a provider’s “too long for the window” context_length_exceeded, never retryable', () => {
    const said = (message: string, responseBody?: string) =>
      toModelError(
        new APICallError({
          message,
          url: 'http://x.test',
          requestBodyValues: {},
          statusCode: 400,
          responseBody,
        }),
        false,
      );
    // OpenAI (and vLLM, which answers as OpenAI does), Anthropic, and an error code in the body alone.
    expect(
      said(
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
      ),
    ).toMatchObject({ code: 'context_length_exceeded', retryable: false, details: { status: 400 } });
    expect(said('prompt is too long: 210000 tokens > 200000 maximum').code).toBe('context_length_exceeded');
    expect(said('Bad Request', '{"error":{"code":"context_length_exceeded"}}').code).toBe(
      'context_length_exceeded',
    );
    expect(said('messages: field required').code).toBe('bad_model_request');
    expect(
      toModelError(
        { type: 'invalid_request_error', message: 'prompt is too long: 9000 tokens > 8192' },
        false,
      ).code,
    ).toBe('context_length_exceeded');
  });

  it('maps provider error events inside a stream', () => {
    expect(toModelError({ type: 'overloaded_error', message: 'Overloaded' }, false)).toMatchObject({
      code: 'provider_error',
      message: 'Overloaded',
      retryable: true,
    });
    expect(toModelError({ type: 'rate_limit_error', message: 'slow down' }, false).code).toBe('rate_limited');
  });

  it('unwraps RetryError and maps bad prompts and aborts', () => {
    const retry = new RetryError({
      message: 'failed',
      reason: 'maxRetriesExceeded',
      errors: [apiError(503)],
    });
    expect(toModelError(retry, false).code).toBe('provider_error');
    expect(toModelError(new InvalidPromptError({ prompt: '', message: 'bad' }), false)).toMatchObject({
      code: 'bad_model_request',
      retryable: false,
    });
    const abort = new DOMException('The operation was aborted.', 'AbortError');
    expect(toModelError(abort, true)).toMatchObject({ code: 'aborted', details: { streamed: true } });
    const controller = new AbortController();
    controller.abort();
    expect(toModelError(new Error('whatever'), false, controller.signal).code).toBe('aborted');
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');

  it('reads seconds, an HTTP date, or retry-after-ms', () => {
    expect(retryAfterMs({ 'retry-after': '1.5' }, now)).toBe(1_500);
    expect(retryAfterMs({ 'Retry-After': 'Thu, 01 Jan 2026 00:00:07 GMT' }, now)).toBe(7_000);
    expect(retryAfterMs({ 'retry-after': 'Wed, 31 Dec 2025 23:00:00 GMT' }, now)).toBe(0);
    expect(retryAfterMs({ 'retry-after-ms': '250', 'retry-after': '9' }, now)).toBe(250);
  });

  it('is undefined without a readable header', () => {
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs({}, now)).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': '' }, now)).toBeUndefined();
  });
});
