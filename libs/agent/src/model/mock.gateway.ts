// The built-in models, always available for development, demos and tests: mock:echo repeats the last user
// text, mock:script plays the session's scripted replies. They stream the same part types as real providers.

import { randomBytes } from 'node:crypto';
import { makeUsage, messageText, type Message } from '@canopy/core';
import { AssistantMessageBuilder } from './assistant-message.builder';
import {
  failedStream,
  ModelError,
  type ModelGateway,
  type ModelRequest,
  type ModelStreamPart,
} from './model-gateway.port';

export const MOCK_MODELS = ['echo', 'script'] as const;

/**
 * One mock:script step. `delayMs` waits before each streamed word and tool call (once before an error or an
 * empty reply); thinking, text and tool calls stream in that order; `error` fails the call before streaming.
 */
export interface MockScriptEntry {
  delayMs?: number;
  thinking?: string;
  text?: string;
  toolCalls?: Array<{ name: string; input?: unknown }>;
  error?: string;
  /** Whether the scripted error is retryable; default false. */
  retryable?: boolean;
}

/** How many conversations the `numbered` echo remembers (oldest forgotten first). */
const NUMBERED_MEMORY = 10_000;

export class MockGateway implements ModelGateway {
  /** `numbered` echo: replies given so far per conversation (the messages a call answers), in this process. */
  private readonly replies = new Map<string, number>();

  check(model: string, _context?: unknown): string | null {
    const name = model.startsWith('mock:') ? model.slice('mock:'.length) : '';
    return (MOCK_MODELS as readonly string[]).includes(name)
      ? null
      : `unknown mock model "${model}" (known: ${MOCK_MODELS.map((m) => `mock:${m}`).join(', ')})`;
  }

  stream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
    const problem = this.check(request.model);
    if (problem)
      return failedStream(new ModelError('model_not_found', problem, { retryable: false, streamed: false }));
    return request.model === 'mock:echo' ? this.echo(request) : this.script(request);
  }

  private async *echo(request: ModelRequest): AsyncGenerator<ModelStreamPart> {
    const delayMs = numberOpt(request.opts.delayMs);
    const lastUserText = [...request.messages]
      .reverse()
      .map((m) => (m.role === 'user' ? messageText(m) : ''))
      .find((text) => text.trim() !== '');
    const number = request.opts.numbered === true ? this.nextReplyNumber(request.messages) : null;
    const reply = `Echo${number !== null ? ` #${number}` : ''}: ${lastUserText ?? ''}`;
    const builder = new AssistantMessageBuilder();
    const run = new Run(request.signal);
    yield* run.text(builder, reply, delayMs);
    run.checkAborted();
    const usage = makeUsage({ inputTokens: requestWords(request.messages), outputTokens: countWords(reply) });
    yield builder.finish(usage, 'stop');
  }

  /**
   * The number of this reply among the replies to the same messages: a regeneration answers the same
   * conversation again and gets the next number, so its text differs from the reply it sits beside.
   */
  private nextReplyNumber(messages: readonly Message[]): number {
    const key = JSON.stringify(messages.map((m) => [m.role, m.content]));
    const number = (this.replies.get(key) ?? 0) + 1;
    this.replies.delete(key); // re-inserted last: the map's order is oldest use first
    this.replies.set(key, number);
    if (this.replies.size > NUMBERED_MEMORY) this.replies.delete(this.replies.keys().next().value!);
    return number;
  }

  private async *script(request: ModelRequest): AsyncGenerator<ModelStreamPart> {
    const entry = scriptEntry(request.opts.script, scriptIndex(request));
    const delayMs = numberOpt(entry.delayMs);
    const run = new Run(request.signal);
    const builder = new AssistantMessageBuilder();
    let outputWords = 0;
    if (entry.error !== undefined || (!entry.thinking && !entry.text && !entry.toolCalls?.length)) {
      await run.pause(delayMs);
    }
    if (entry.error !== undefined) {
      throw new ModelError('provider_error', entry.error, {
        retryable: entry.retryable ?? false,
        streamed: false,
      });
    }
    if (entry.thinking) {
      yield* run.thinking(builder, entry.thinking, delayMs);
      outputWords += countWords(entry.thinking);
    }
    if (entry.text) {
      yield* run.text(builder, entry.text, delayMs);
      outputWords += countWords(entry.text);
    }
    for (const call of entry.toolCalls ?? []) {
      await run.pause(delayMs);
      const json = JSON.stringify(call.input ?? {});
      const start = builder.startToolUse(`toolu_${randomBytes(12).toString('hex')}`, call.name);
      yield run.emit(start);
      yield run.emit(builder.appendToolInput(start.index, json));
      yield run.emit(builder.endToolUse(start.index, call.input ?? {}));
      outputWords += countWords(json);
    }
    run.checkAborted();
    const usage = makeUsage({ inputTokens: requestWords(request.messages), outputTokens: outputWords });
    yield builder.finish(usage, entry.toolCalls?.length ? 'tool_use' : 'stop');
  }
}

/** One mock call's pacing and abort handling; remembers whether parts were streamed. */
class Run {
  private streamed = false;
  /** Ends the pause in progress at once (the abort listener's doing). */
  private wake: (() => void) | null = null;
  private listening = false;

  constructor(private readonly signal: AbortSignal) {}

  emit<T extends ModelStreamPart>(part: T): T {
    this.checkAborted();
    this.streamed = true;
    return part;
  }

  checkAborted(): void {
    if (this.signal.aborted) {
      throw new ModelError('aborted', 'the model call was aborted', {
        retryable: false,
        streamed: this.streamed,
      });
    }
  }

  /** Waits, cut short by an abort (which then throws). */
  async pause(ms: number): Promise<void> {
    this.checkAborted();
    if (ms > 0) {
      // One abort listener for the whole call (adding and removing one per pause cost more than the pause).
      if (!this.listening) {
        this.listening = true;
        this.signal.addEventListener('abort', () => this.wake?.(), { once: true });
      }
      await new Promise<void>((resolve) => {
        // Sessions are validated to at most 10 minutes; anything older or larger still never overflows the timer.
        const timer = setTimeout(
          () => {
            this.wake = null;
            resolve();
          },
          Math.min(ms, 600_000),
        );
        this.wake = () => {
          clearTimeout(timer);
          this.wake = null;
          resolve();
        };
      });
    }
    this.checkAborted();
  }

  async *text(
    builder: AssistantMessageBuilder,
    text: string,
    delayMs: number,
  ): AsyncGenerator<ModelStreamPart> {
    const start = builder.startText();
    yield this.emit(start);
    for (const word of wordChunks(text)) {
      await this.pause(delayMs);
      yield this.emit(builder.appendText(start.index, word));
    }
    yield this.emit(builder.endText(start.index));
  }

  async *thinking(
    builder: AssistantMessageBuilder,
    text: string,
    delayMs: number,
  ): AsyncGenerator<ModelStreamPart> {
    const start = builder.startThinking();
    yield this.emit(start);
    for (const word of wordChunks(text)) {
      await this.pause(delayMs);
      yield this.emit(builder.appendThinking(start.index, word));
    }
    yield this.emit(builder.endThinking(start.index));
  }
}

/**
 * Splits text into one chunk per word, each carrying the whitespace before it (trailing whitespace goes with
 * the last word), so the chunks join back to the text exactly.
 */
export function wordChunks(text: string): string[] {
  const chunks = text.match(/\s*\S+\s*$|\s*\S+/g);
  return chunks ?? (text === '' ? [] : [text]);
}

export function countWords(text: string): number {
  return text.split(/\s+/).filter((w) => w !== '').length;
}

function requestWords(messages: readonly Message[]): number {
  return messages.reduce((n, m) => n + countWords(messageText(m)), 0);
}

function numberOpt(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * The entry a mock:script call plays. Each model step consumes the next entry, and an error entry is consumed by
 * the attempt that hit it (its retry plays the entry after it). So the entries a context consumed are read off
 * the context itself: each assistant message in it consumed one reply entry and every error entry before that
 * one. The call plays the entry after them, plus one per failed attempt of this step. A regeneration (the same
 * context) plays what the original reply's step played; a run that failed left nothing in the context, so the
 * same context meets the same error again.
 */
export function scriptIndex(request: Pick<ModelRequest, 'messages' | 'opts' | 'attempt'>): number {
  const script = Array.isArray(request.opts.script) ? (request.opts.script as unknown[]) : [];
  let replies = request.messages.filter((m) => m.role === 'assistant').length;
  let index = 0;
  while (replies > 0 && index < script.length) {
    if (!isErrorEntry(script[index])) replies--;
    index++;
  }
  // Past the end (more replies than the script has): the index names the missing entry.
  return index + replies + request.attempt;
}

function isErrorEntry(entry: unknown): boolean {
  return typeof entry === 'object' && entry !== null && (entry as { error?: unknown }).error !== undefined;
}

function scriptEntry(script: unknown, callIndex: number): MockScriptEntry {
  if (!Array.isArray(script)) {
    throw new ModelError('bad_model_request', 'mock:script needs opts.script, an array of replies', {
      retryable: false,
      streamed: false,
    });
  }
  const entry: unknown = script[callIndex];
  if (entry === undefined) {
    throw new ModelError('bad_model_request', `mock:script has no entry ${callIndex}`, {
      retryable: false,
      streamed: false,
    });
  }
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw new ModelError('bad_model_request', `mock:script entry ${callIndex} is not an object`, {
      retryable: false,
      streamed: false,
    });
  }
  const e = entry as Record<string, unknown>;
  const toolCalls = Array.isArray(e.toolCalls)
    ? e.toolCalls.map((c: unknown, i) => {
        const call = (typeof c === 'object' && c !== null ? c : {}) as Record<string, unknown>;
        if (typeof call.name !== 'string' || call.name === '') {
          throw new ModelError(
            'bad_model_request',
            `mock:script entry ${callIndex}: tool call ${i} has no name`,
            {
              retryable: false,
              streamed: false,
            },
          );
        }
        return { name: call.name, input: call.input };
      })
    : undefined;
  return {
    delayMs: typeof e.delayMs === 'number' ? e.delayMs : undefined,
    thinking: typeof e.thinking === 'string' ? e.thinking : undefined,
    text: typeof e.text === 'string' ? e.text : undefined,
    toolCalls,
    error:
      typeof e.error === 'string' ? e.error : e.error !== undefined ? JSON.stringify(e.error) : undefined,
    retryable: e.retryable === true,
  };
}
