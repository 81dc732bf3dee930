// Server-Sent Events over fetch (so a request carries the Authorization header, in Node and in browsers alike),
// parsed by eventsource-parser, as an async iterator of messages that reconnects by itself. A stream the server
// ended because its credential stopped being valid (`end` {reason: "unauthorized" | "tenant_disabled"}) is not
// reconnected: its reader throws that error (credentialEnd).

import { createParser, type EventSourceMessage } from 'eventsource-parser';

import { CanopyError } from './errors';
import { abortError, sleep, type Http } from './http';

export interface SseMessage {
  id: string | undefined;
  event: string;
  data: string;
}

export interface SseStreamOptions {
  query?: Record<string, string | number | boolean | undefined | null>;
  signal?: AbortSignal;
  /**
   * Called before every (re)connection: the query to connect with (e.g. `after` = the last seq seen). The
   * stream reconnects after the server or the network ended it, until the signal aborts or `shouldReconnect`
   * says no.
   */
  resumeQuery?: () => Record<string, string | number | undefined>;
  /** Whether to reconnect after the stream ended with this message last (default: always). */
  shouldReconnect?: (last: SseMessage | null) => boolean;
  /** First delay before reconnecting, doubled up to 10 s while connections keep failing (default 500 ms). */
  reconnectDelayMs?: number;
}

const MAX_RECONNECT_DELAY_MS = 10_000;

/** The error of an `end` message that says the stream's credential stopped being valid; null for anything else. */
export function credentialEnd(message: SseMessage): CanopyError | null {
  if (message.event !== 'end') return null;
  let reason: unknown;
  try {
    reason = (JSON.parse(message.data) as { reason?: unknown } | null)?.reason;
  } catch {
    return null;
  }
  if (reason === 'unauthorized')
    return new CanopyError({ code: reason, message: 'the credential was revoked or expired', status: 0 });
  if (reason === 'tenant_disabled')
    return new CanopyError({ code: reason, message: 'this tenant is disabled', status: 0 });
  return null;
}

/** Messages of an SSE endpoint, across reconnections. Ends when the signal aborts or reconnection is refused. */
export async function* sseStream(
  http: Http,
  path: string,
  options: SseStreamOptions = {},
): AsyncGenerator<SseMessage> {
  const firstDelay = options.reconnectDelayMs ?? 500;
  let delay = firstDelay;
  for (;;) {
    let last: SseMessage | null = null;
    try {
      const res = await http.send('GET', path, {
        query: { ...options.query, ...options.resumeQuery?.() },
        headers: { accept: 'text/event-stream' },
        ...(options.signal ? { signal: options.signal } : {}),
      });
      delay = firstDelay;
      for await (const message of readSse(res, options.signal)) {
        last = message;
        yield message;
      }
    } catch (err) {
      if (options.signal?.aborted) return;
      // Refusals (bad credential, unknown session, bad query) do not get better by retrying.
      if (err instanceof CanopyError && err.status >= 400 && err.status < 500 && err.status !== 429)
        throw err;
    }
    if (options.signal?.aborted) return;
    if (options.shouldReconnect && !options.shouldReconnect(last)) return;
    try {
      await sleep(delay, options.signal);
    } catch {
      return;
    }
    delay = Math.min(MAX_RECONNECT_DELAY_MS, delay * 2);
  }
}

/** The messages of one SSE response, until it ends. */
async function* readSse(res: Response, signal?: AbortSignal): AsyncGenerator<SseMessage> {
  if (!res.body)
    throw new CanopyError({ code: 'network_error', message: 'the event stream has no body', status: 0 });
  const queue: SseMessage[] = [];
  const parser = createParser({
    onEvent: (m: EventSourceMessage) => queue.push({ id: m.id, event: m.event ?? 'message', data: m.data }),
  });
  const reader: ReadableStreamDefaultReader<Uint8Array> = res.body.getReader();
  const decoder = new TextDecoder();
  const onAbort = () => void reader.cancel().catch(() => undefined);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      if (signal?.aborted) throw abortError();
      const { done, value } = await reader.read();
      if (done) return;
      parser.feed(decoder.decode(value, { stream: true }));
      while (queue.length > 0) yield queue.shift()!;
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await reader.cancel().catch(() => undefined);
  }
}
