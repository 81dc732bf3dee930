// A local stand-in for model providers, so the real provider code paths (AI SDK, fetch, SSE parsing) run in
// tests without a network route. Speaks the Anthropic Messages stream (POST /v1/messages), OpenAI Chat
// Completions stream (POST /v1/chat/completions, also what openai-compatible servers speak) and OpenAI
// Responses stream (POST /v1/responses, the AI SDK's default for `openai:`). Tests queue scripted replies
// and read back the request bodies the server received.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeToolCall {
  name: string;
  input: unknown;
  /** Provider tool-call id; default generated. */
  id?: string;
  /** The argument JSON as streamed, in pieces; default JSON.stringify(input) in two halves. */
  chunks?: string[];
}

export interface FakeUsage {
  /** Uncached input tokens. */
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/** A streamed reply: thinking, then text, then tool calls. */
export interface FakeStreamReply {
  thinking?: string[];
  /** Signature of the thinking block (Anthropic only). */
  signature?: string;
  text?: string[];
  toolCalls?: FakeToolCall[];
  usage?: FakeUsage;
  /** The model the reply says answered (a provider may name a dated version of the one asked); default the one asked. */
  model?: string;
  /** Default: 'tool_use' when there are tool calls, else 'stop'. */
  finish?: 'stop' | 'tool_use' | 'length';
  /** Waits this long before each event of the stream. */
  eventDelayMs?: number;
  /** Sends no event until this settles: a test holds a call in flight until it has done what it must meanwhile. */
  hold?: Promise<unknown>;
  /** Fails the stream once this many delta events (text, thinking or argument pieces) have been sent. */
  failAfterDeltas?: number;
  /** How it fails: the connection destroyed (default) or the format's error event followed by the end. */
  failWith?: 'disconnect' | 'error-event';
}

/** An HTTP error instead of a stream. */
export interface FakeHttpError {
  status: number;
  /** Sent as the Retry-After header. */
  retryAfter?: string;
  headers?: Record<string, string>;
  message?: string;
}

export type FakeReply = FakeStreamReply | FakeHttpError;

export type FakeApi = 'anthropic' | 'chat' | 'responses';

export interface FakeRequest {
  api: FakeApi;
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

const ROUTES: Record<string, FakeApi> = {
  '/v1/messages': 'anthropic',
  '/v1/chat/completions': 'chat',
  '/v1/responses': 'responses',
};

interface SseEvent {
  event?: string;
  data: unknown;
  /** Counts toward failAfterDeltas. */
  delta?: boolean;
}

export class FakeLlmServer {
  /** Every request received, in order. */
  readonly requests: FakeRequest[] = [];
  private readonly replies: FakeReply[] = [];
  private responder: ((request: FakeRequest) => FakeReply) | null = null;
  private server: Server | undefined;
  private port = 0;
  private ids = 0;

  /** Starts a server on a free local port. */
  static async start(): Promise<FakeLlmServer> {
    const fake = new FakeLlmServer();
    await fake.listen();
    return fake;
  }

  /** Base URL in the AI SDK's convention (it includes /v1). */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  /** Queues replies; each request takes the next one, whichever API it calls. */
  enqueue(...replies: FakeReply[]): this {
    this.replies.push(...replies);
    return this;
  }

  /**
   * Answers the requests that find no queued reply: the test decides from the request (e.g. a summarizing call
   * and a conversation's next turn answered differently). Null: none (they get a 500).
   */
  respondWith(responder: ((request: FakeRequest) => FakeReply) | null): this {
    this.responder = responder;
    return this;
  }

  get pending(): number {
    return this.replies.length;
  }

  lastRequest(): FakeRequest {
    const last = this.requests.at(-1);
    if (!last) throw new Error('fake-llm-server: no request received');
    return last;
  }

  reset(): void {
    this.requests.length = 0;
    this.replies.length = 0;
    this.responder = null;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
  }

  private async listen(): Promise<void> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err) } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const api = ROUTES[path];
    const raw = await readBody(req);
    if (req.method !== 'POST' || !api) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `fake-llm-server: no route ${req.method} ${path}` } }));
      return;
    }
    const body = (raw === '' ? {} : JSON.parse(raw)) as Record<string, unknown>;
    const request: FakeRequest = { api, path, headers: req.headers, body };
    this.requests.push(request);
    const reply = this.replies.shift() ?? this.responder?.(request);
    if (!reply) {
      sendError(res, api, { status: 500, message: 'fake-llm-server: no reply queued' });
      return;
    }
    if ('status' in reply) {
      sendError(res, api, reply);
      return;
    }
    const events =
      api === 'anthropic'
        ? this.anthropicEvents(reply, body)
        : api === 'chat'
          ? this.chatEvents(reply, body)
          : this.responsesEvents(reply, body);
    await this.sendStream(res, api, reply, events);
  }

  private async sendStream(res: ServerResponse, api: FakeApi, reply: FakeStreamReply, events: SseEvent[]) {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    let deltas = 0;
    await reply.hold?.catch(() => undefined);
    for (const event of events) {
      if (reply.eventDelayMs) await new Promise((r) => setTimeout(r, reply.eventDelayMs));
      if (res.destroyed) return; // the client went away (an aborted call)
      if (reply.failAfterDeltas !== undefined && event.delta && deltas >= reply.failAfterDeltas) {
        if (reply.failWith === 'error-event') {
          await write(res, sse(errorEvent(api, deltas)));
          res.end();
        } else {
          // Let what was written reach the client, then cut the connection mid-stream.
          res.socket?.destroy();
        }
        return;
      }
      if (event.delta) deltas++;
      await write(res, sse(event));
    }
    res.end();
  }

  private nextId(prefix: string): string {
    this.ids++;
    return `${prefix}${this.ids}`;
  }

  private anthropicEvents(reply: FakeStreamReply, body: Record<string, unknown>): SseEvent[] {
    const usage = reply.usage ?? { inputTokens: 10, outputTokens: 5 };
    const out: SseEvent[] = [];
    const ev = (type: string, data: Record<string, unknown>, delta = false) =>
      out.push({ event: type, data: { type, ...data }, delta });
    ev('message_start', {
      message: {
        id: this.nextId('msg_fake_'),
        type: 'message',
        role: 'assistant',
        model: reply.model ?? (typeof body.model === 'string' ? body.model : 'fake'),
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: usage.inputTokens,
          output_tokens: 1,
          cache_creation_input_tokens: usage.cacheWriteTokens ?? 0,
          cache_read_input_tokens: usage.cacheReadTokens ?? 0,
        },
      },
    });
    let index = 0;
    if (reply.thinking) {
      ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '' } });
      for (const t of reply.thinking) {
        ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: t } }, true);
      }
      if (reply.signature) {
        ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: reply.signature } });
      }
      ev('content_block_stop', { index });
      index++;
    }
    if (reply.text) {
      ev('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const t of reply.text)
        ev('content_block_delta', { index, delta: { type: 'text_delta', text: t } }, true);
      ev('content_block_stop', { index });
      index++;
    }
    for (const call of reply.toolCalls ?? []) {
      const id = call.id ?? this.nextId('toolu_fake_');
      ev('content_block_start', {
        index,
        content_block: { type: 'tool_use', id, name: call.name, input: {} },
      });
      for (const chunk of argumentChunks(call)) {
        ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: chunk } }, true);
      }
      ev('content_block_stop', { index });
      index++;
    }
    const stop = { stop: 'end_turn', tool_use: 'tool_use', length: 'max_tokens' }[finishOf(reply)];
    ev('message_delta', {
      delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: usage.outputTokens },
    });
    ev('message_stop', {});
    return out;
  }

  private chatEvents(reply: FakeStreamReply, body: Record<string, unknown>): SseEvent[] {
    const usage = reply.usage ?? { inputTokens: 10, outputTokens: 5 };
    const id = this.nextId('chatcmpl-fake-');
    const model = reply.model ?? (typeof body.model === 'string' ? body.model : 'fake');
    const chunk = (
      delta: Record<string, unknown>,
      finish: string | null = null,
      isDelta = false,
    ): SseEvent => ({
      data: {
        id,
        object: 'chat.completion.chunk',
        created: 1_700_000_000,
        model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      },
      delta: isDelta,
    });
    const out: SseEvent[] = [chunk({ role: 'assistant', content: '' })];
    for (const t of reply.thinking ?? []) out.push(chunk({ reasoning_content: t }, null, true));
    for (const t of reply.text ?? []) out.push(chunk({ content: t }, null, true));
    (reply.toolCalls ?? []).forEach((call, i) => {
      const callId = call.id ?? this.nextId('call_fake_');
      out.push(
        chunk({
          tool_calls: [
            { index: i, id: callId, type: 'function', function: { name: call.name, arguments: '' } },
          ],
        }),
      );
      for (const piece of argumentChunks(call)) {
        out.push(chunk({ tool_calls: [{ index: i, function: { arguments: piece } }] }, null, true));
      }
    });
    out.push(chunk({}, { stop: 'stop', tool_use: 'tool_calls', length: 'length' }[finishOf(reply)]));
    const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
    if (streamOptions?.include_usage) {
      const prompt = usage.inputTokens + (usage.cacheReadTokens ?? 0);
      out.push({
        data: {
          id,
          object: 'chat.completion.chunk',
          created: 1_700_000_000,
          model,
          choices: [],
          usage: {
            prompt_tokens: prompt,
            completion_tokens: usage.outputTokens,
            total_tokens: prompt + usage.outputTokens,
            prompt_tokens_details: { cached_tokens: usage.cacheReadTokens ?? 0 },
          },
        },
      });
    }
    out.push({ data: '[DONE]' });
    return out;
  }

  private responsesEvents(reply: FakeStreamReply, body: Record<string, unknown>): SseEvent[] {
    const usage = reply.usage ?? { inputTokens: 10, outputTokens: 5 };
    const out: SseEvent[] = [];
    let seq = 0;
    const ev = (type: string, data: Record<string, unknown>, delta = false) =>
      out.push({ event: type, data: { type, sequence_number: seq++, ...data }, delta });
    const response = {
      id: this.nextId('resp_fake_'),
      object: 'response',
      created_at: 1_700_000_000,
      model: reply.model ?? (typeof body.model === 'string' ? body.model : 'fake'),
      status: 'in_progress',
      output: [],
    };
    ev('response.created', { response });
    let outputIndex = 0;
    if (reply.thinking) {
      const item = { type: 'reasoning', id: this.nextId('rs_fake_'), summary: [] };
      ev('response.output_item.added', { output_index: outputIndex, item });
      ev('response.reasoning_summary_part.added', {
        item_id: item.id,
        output_index: outputIndex,
        summary_index: 0,
        part: { type: 'summary_text', text: '' },
      });
      for (const t of reply.thinking) {
        ev(
          'response.reasoning_summary_text.delta',
          { item_id: item.id, output_index: outputIndex, summary_index: 0, delta: t },
          true,
        );
      }
      const text = reply.thinking.join('');
      ev('response.reasoning_summary_part.done', {
        item_id: item.id,
        output_index: outputIndex,
        summary_index: 0,
        part: { type: 'summary_text', text },
      });
      ev('response.output_item.done', {
        output_index: outputIndex,
        item: { ...item, summary: [{ type: 'summary_text', text }] },
      });
      outputIndex++;
    }
    if (reply.text) {
      const id = this.nextId('msg_fake_');
      const text = reply.text.join('');
      ev('response.output_item.added', {
        output_index: outputIndex,
        item: { type: 'message', id, status: 'in_progress', role: 'assistant', content: [] },
      });
      ev('response.content_part.added', {
        item_id: id,
        output_index: outputIndex,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
      for (const t of reply.text) {
        ev(
          'response.output_text.delta',
          { item_id: id, output_index: outputIndex, content_index: 0, delta: t, logprobs: [] },
          true,
        );
      }
      ev('response.output_text.done', { item_id: id, output_index: outputIndex, content_index: 0, text });
      ev('response.output_item.done', {
        output_index: outputIndex,
        item: {
          type: 'message',
          id,
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text, annotations: [] }],
        },
      });
      outputIndex++;
    }
    for (const call of reply.toolCalls ?? []) {
      const item = {
        type: 'function_call',
        id: this.nextId('fc_fake_'),
        call_id: call.id ?? this.nextId('call_fake_'),
        name: call.name,
        arguments: '',
      };
      ev('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, status: 'in_progress' },
      });
      const chunks = argumentChunks(call);
      for (const piece of chunks) {
        ev(
          'response.function_call_arguments.delta',
          { item_id: item.id, output_index: outputIndex, delta: piece },
          true,
        );
      }
      const args = chunks.join('');
      ev('response.function_call_arguments.done', {
        item_id: item.id,
        output_index: outputIndex,
        arguments: args,
      });
      ev('response.output_item.done', {
        output_index: outputIndex,
        item: { ...item, arguments: args, status: 'completed' },
      });
      outputIndex++;
    }
    const finish = finishOf(reply);
    const prompt = usage.inputTokens + (usage.cacheReadTokens ?? 0);
    const final = {
      ...response,
      status: finish === 'length' ? 'incomplete' : 'completed',
      incomplete_details: finish === 'length' ? { reason: 'max_output_tokens' } : null,
      usage: {
        input_tokens: prompt,
        input_tokens_details: { cached_tokens: usage.cacheReadTokens ?? 0 },
        output_tokens: usage.outputTokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: prompt + usage.outputTokens,
      },
    };
    ev(finish === 'length' ? 'response.incomplete' : 'response.completed', { response: final });
    return out;
  }
}

function finishOf(reply: FakeStreamReply): 'stop' | 'tool_use' | 'length' {
  return reply.finish ?? (reply.toolCalls?.length ? 'tool_use' : 'stop');
}

function argumentChunks(call: FakeToolCall): string[] {
  if (call.chunks) return call.chunks;
  const json = JSON.stringify(call.input);
  const half = Math.ceil(json.length / 2);
  return [json.slice(0, half), json.slice(half)].filter((c) => c !== '');
}

function sse(event: SseEvent): string {
  const data = typeof event.data === 'string' ? event.data : JSON.stringify(event.data);
  return `${event.event ? `event: ${event.event}\n` : ''}data: ${data}\n\n`;
}

function errorEvent(api: FakeApi, sequence: number): SseEvent {
  const message = 'fake-llm-server: stream failed';
  if (api === 'anthropic')
    return { event: 'error', data: { type: 'error', error: { type: 'api_error', message } } };
  if (api === 'chat') return { data: { error: { message, type: 'server_error', code: null } } };
  return {
    event: 'error',
    data: { type: 'error', sequence_number: sequence, code: 'server_error', message, param: null },
  };
}

function sendError(res: ServerResponse, api: FakeApi, error: FakeHttpError): void {
  const message = error.message ?? `fake-llm-server: HTTP ${error.status}`;
  const type =
    error.status === 429
      ? 'rate_limit_error'
      : error.status === 404
        ? 'not_found_error'
        : error.status >= 500
          ? 'api_error'
          : 'invalid_request_error';
  const body =
    api === 'anthropic'
      ? { type: 'error', error: { type, message } }
      : {
          error: { message, type: type === 'rate_limit_error' ? 'requests' : type, param: null, code: null },
        };
  res.writeHead(error.status, {
    'content-type': 'application/json',
    ...(error.retryAfter !== undefined && { 'retry-after': error.retryAfter }),
    ...error.headers,
  });
  res.end(JSON.stringify(body));
}

function write(res: ServerResponse, chunk: string): Promise<void> {
  return new Promise((resolve, reject) => res.write(chunk, (err) => (err ? reject(err) : resolve())));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
