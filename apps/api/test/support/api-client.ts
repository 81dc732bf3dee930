// A small HTTP/SSE client for end-to-end tests: JSON requests with a credential, tenants made through the admin
// route, and an SSE reader that parses frames (eventsource-parser) as they arrive.

/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of any shape, read loosely by tests */

import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { eventually } from '@canopy/testing';
import { TEST_ADMIN_KEY, type TestApp } from './test-app';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export class Api {
  constructor(
    readonly baseUrl: string,
    readonly credential?: string,
  ) {}

  as(credential: string | undefined): Api {
    return new Api(this.baseUrl, credential);
  }

  async request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        ...(this.credential ? { authorization: `Bearer ${this.credential}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON (metrics, docs)
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  get<T = any>(path: string) {
    return this.request<T>('GET', path);
  }
  post<T = any>(path: string, body?: unknown) {
    return this.request<T>('POST', path, body ?? {});
  }
  patch<T = any>(path: string, body: unknown) {
    return this.request<T>('PATCH', path, body);
  }
  delete<T = any>(path: string) {
    return this.request<T>('DELETE', path);
  }
}

/** A new tenant (through the admin route) and an Api speaking with its key. */
export async function newTenant(
  app: TestApp,
  name = 'tenant',
): Promise<{ tenantId: string; api: Api; key: string }> {
  const admin = new Api(app.url, TEST_ADMIN_KEY);
  const res = await admin.post('/v1/admin/tenants', { name });
  if (res.status !== 201)
    throw new Error(`tenant creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { tenantId: res.body.id, key: res.body.apiKey, api: new Api(app.url, res.body.apiKey) };
}

export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: any;
}

/** Reads an SSE stream in the background; `events` fills as frames arrive. */
export class SseReader {
  readonly events: SseEvent[] = [];
  status = 0;
  ended = false;
  private readonly controller = new AbortController();

  static async open(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
    const reader = new SseReader();
    const res = await fetch(url, {
      headers: { accept: 'text/event-stream', ...headers },
      signal: reader.controller.signal,
    });
    reader.status = res.status;
    if (!res.ok || !res.body) {
      reader.ended = true;
      reader.events.push({ id: undefined, event: 'http_error', data: await res.text() });
      return reader;
    }
    const parser = createParser({
      onEvent: (m: EventSourceMessage) => {
        let data: unknown = m.data;
        try {
          data = JSON.parse(m.data);
        } catch {
          // plain text
        }
        reader.events.push({ id: m.id, event: m.event, data });
      },
    });
    void (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
          parser.feed(decoder.decode(chunk, { stream: true }));
      } catch {
        // aborted
      } finally {
        reader.ended = true;
      }
    })();
    return reader;
  }

  close(): void {
    this.controller.abort();
  }

  async waitFor(pred: (e: SseEvent) => boolean, timeoutMs = 5_000): Promise<SseEvent> {
    return eventually(
      () => {
        const found = this.events.find(pred);
        if (!found)
          throw new Error(`no matching SSE event yet (have ${this.events.map((e) => e.event).join(',')})`);
        return found;
      },
      { timeoutMs },
    );
  }
}
