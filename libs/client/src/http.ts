// The HTTP layer: JSON requests with the credential, errors as CanopyError, and retries only where they are
// safe — a request the service refused before doing anything (429), or one that is idempotent (reads, deletes,
// close, navigate, updates) after a network error or a 502/503/504.

import { CanopyError, errorFromResponse } from './errors';

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

export interface HttpOptions {
  /** The service's root URL, e.g. `https://canopy.example.com` (no `/v1`). */
  baseUrl: string;
  /** An admin key, a tenant API key (`ck_…`) or a user token; a function is asked before every request. */
  credential: string | (() => string | Promise<string>);
  /** Default: the global fetch (Node 18+, browsers). */
  fetch?: FetchLike;
  /** Retries of a retryable failure (default 2; 0 disables). */
  maxRetries?: number;
  /** First backoff delay; doubled at each retry, capped at 5 s, or what `Retry-After` says (default 250 ms). */
  retryDelayMs?: number;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined | null>;
  body?: unknown;
  /** A body sent as is (its content-type in `headers`), instead of `body` as JSON: text, or bytes (a file). */
  rawBody?: string | Blob | ArrayBuffer | Uint8Array;
  /** Safe to send twice (retried after a network error or a 502/503/504). GET and DELETE always are. */
  idempotent?: boolean;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

const MAX_BACKOFF_MS = 5_000;

export class Http {
  readonly baseUrl: string;
  private readonly fetchImpl: FetchLike;
  private readonly maxRetries: number;
  private readonly retryDelayMs: number;

  constructor(private readonly options: HttpOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (!fetchImpl) throw new TypeError('no fetch: pass options.fetch (Node 18+ and browsers have one)');
    // Called as a plain function: a browser's fetch called as a method of another object throws "Illegal
    // invocation".
    this.fetchImpl = (input, init) => fetchImpl(input, init);
    this.maxRetries = options.maxRetries ?? 2;
    this.retryDelayMs = options.retryDelayMs ?? 250;
  }

  async credential(): Promise<string> {
    const c = this.options.credential;
    return typeof c === 'function' ? c() : c;
  }

  url(path: string, query?: RequestOptions['query']): string {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    }
    return url.toString();
  }

  /** Sends a request and answers its JSON body (undefined for 204). */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const res = await this.send(method, path, options);
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  /** Sends a request and answers the response (2xx only; the body is left to read), retrying where safe. */
  async send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const idempotent = options.idempotent ?? (method === 'GET' || method === 'DELETE' || method === 'HEAD');
    for (let attempt = 0; ; attempt++) {
      let error: CanopyError;
      try {
        const res = await this.fetchImpl(this.url(path, options.query), {
          method,
          headers: {
            authorization: `Bearer ${await this.credential()}`,
            accept: 'application/json',
            ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...options.headers,
          },
          ...(options.rawBody !== undefined
            ? { body: options.rawBody as NonNullable<RequestInit['body']> }
            : options.body !== undefined
              ? { body: JSON.stringify(options.body) }
              : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        });
        if (res.ok) return res;
        error = errorFromResponse(res.status, await res.json().catch(() => null), res.headers);
      } catch (err) {
        if (err instanceof CanopyError) throw err;
        if (options.signal?.aborted) {
          throw new CanopyError({
            code: 'aborted',
            message: 'the request was aborted',
            status: 0,
            cause: err,
          });
        }
        error = new CanopyError({
          code: 'network_error',
          message: `could not reach Canopy at ${this.baseUrl}: ${(err as Error).message}`,
          status: 0,
          cause: err,
        });
      }
      if (attempt >= this.maxRetries || !retryable(error, idempotent)) throw error;
      await sleep(
        error.retryAfterMs ?? Math.min(MAX_BACKOFF_MS, this.retryDelayMs * 2 ** attempt),
        options.signal,
      );
    }
  }
}

/**
 * 429 was refused before anything happened (but a quota stays exceeded until it resets: not retried); the others
 * only when sending twice does no harm.
 */
function retryable(error: CanopyError, idempotent: boolean): boolean {
  if (error.code === 'quota_exceeded') return false;
  if (error.status === 429) return true;
  if (!idempotent) return false;
  return (
    error.code === 'network_error' || error.status === 502 || error.status === 503 || error.status === 504
  );
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError());
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError());
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function abortError(): CanopyError {
  return new CanopyError({ code: 'aborted', message: 'aborted', status: 0 });
}
