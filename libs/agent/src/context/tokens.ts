// Counting a request in tokens before it is sent, so a run can tell whether its context fits the model's window.
// OpenAI's models are counted with their own encodings (gpt-tokenizer: o200k_base, cl100k_base); a provider with no
// public tokenizer (Anthropic, OpenAI-compatible servers) is counted with o200k_base and a safety margin, since its
// own tokenizer may cut the same text finer. The mocks count exactly with o200k_base, so tests can predict counts.
// Attachments are estimates (see below): their tokens depend on how the provider renders them.

import { toolResultText, type AttachmentBlock, type Block, type Message } from '@canopy/core';
import type { GptEncoding } from 'gpt-tokenizer/cjs/GptEncoding';
import { THINKING_REPLAY } from '../model/ai-sdk.gateway';
import type { ThinkingReplay } from '../model/message-mapping';
import type { ModelToolSpec } from '../model/model-gateway.port';
import { isModelProblem, parseModelId } from '../model/model-id';

export interface TokenCounter {
  /** Tokens of one message as sent (role overhead included). */
  message(m: Message): number;
  system(system: string | null): number;
  /** The tools' names, descriptions and JSON schemas as sent. */
  tools(tools: readonly ModelToolSpec[]): number;
  text(text: string): number;
}

/**
 * Each message's framing: 3 tokens around it and 1 for its role, as OpenAI's chat format has them (gpt-tokenizer's
 * chat estimate counts the same). The system prompt pays it too.
 */
export const MESSAGE_OVERHEAD_TOKENS = 4;
/** A tool use or tool result besides its text: its id's framing (OpenAI sends each tool result as a message). */
export const TOOL_BLOCK_OVERHEAD_TOKENS = 4;
/** A tool definition's framing besides its name, description and schema. */
export const TOOL_DEFINITION_OVERHEAD_TOKENS = 8;
/**
 * What a request with tools pays once: Anthropic adds a tool-use system prompt of 346 tokens (its documented figure
 * for Claude 4 models with tool_choice auto); OpenAI wraps the definitions in a namespace (9 tokens, gpt-tokenizer's
 * figure), taken for the other providers too.
 */
export const ANTHROPIC_TOOLS_PREAMBLE_TOKENS = 346;
export const TOOLS_PREAMBLE_TOKENS = 9;
/**
 * An image, whatever its size: Anthropic scales images to at most ~1.15 megapixels, about 1,600 tokens
 * (width × height / 750), and OpenAI's high-detail tiles of a large image come to less (85 + 170 per 512-px tile,
 * ~1,100 at most). A file given by URL alone (its size unknown without fetching it) is counted the same.
 */
export const IMAGE_TOKENS = 1_600;
/**
 * Any other attachment given as data (PDF, audio, text): one token per 4 bytes of the decoded data (base64 length
 * × 3/4 / 4), not capped: a larger file never counts for less. A PDF's text runs about so; its page images and an
 * audio file's seconds are the provider's own reckoning.
 */
export const BYTES_PER_FILE_TOKEN = 4;
/** The safety margins, in percent of the o200k_base count, of providers without a public tokenizer. */
export const TOKEN_MARGIN_PERCENT = {
  anthropic: 115,
  'openai-compatible': 115,
  openai: 100,
  mock: 100,
} as const;

type EncodingName = 'o200k_base' | 'cl100k_base';

/** Special tokens in a message are counted as the plain text they are to a provider, never refused. */
const ORDINARY_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * Each encoding is loaded on first use, once per process: loading o200k_base takes ~0.2-0.5 s and ~130 MB, which a
 * process that never counts (or never for that encoding) should not pay.
 */
const encodings = new Map<EncodingName, GptEncoding>();
function encoding(name: EncodingName): GptEncoding {
  let loaded = encodings.get(name);
  if (loaded === undefined) {
    /* eslint-disable @typescript-eslint/no-require-imports -- loaded lazily (see above); subpaths load one encoding */
    const module =
      name === 'o200k_base'
        ? (require('gpt-tokenizer/cjs/encoding/o200k_base') as { default: GptEncoding })
        : (require('gpt-tokenizer/cjs/encoding/cl100k_base') as { default: GptEncoding });
    /* eslint-enable @typescript-eslint/no-require-imports */
    loaded = module.default;
    encodings.set(name, loaded);
  }
  return loaded;
}

/**
 * Characters per token of the estimate used where no limit is at stake (a model whose window is not known): no
 * tokenizer is loaded for such models, whose counts are only shown (GET …/context, the meter).
 */
export const ESTIMATED_CHARS_PER_TOKEN = 4;

interface Profile {
  /** `estimate`: characters / ESTIMATED_CHARS_PER_TOKEN, no tokenizer. */
  encoding: EncodingName | 'estimate';
  /** Applied to tokenized text only; the fixed overheads and attachment estimates are taken as they are. */
  marginPercent: number;
  /** Which thinking blocks are sent (and so counted). */
  thinking: ThinkingReplay;
  toolsPreamble: number;
}

/** OpenAI: o200k_base for gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and the o-series (and anything newer), cl100k_base for gpt-4 and gpt-3.5. */
function openAiEncoding(name: string): EncodingName {
  return /^gpt-3\.5/.test(name) || /^gpt-4(?![o.])/.test(name) ? 'cl100k_base' : 'o200k_base';
}

function profileOf(model: string): Profile {
  const id = parseModelId(model);
  if (isModelProblem(id)) {
    return {
      encoding: 'o200k_base',
      marginPercent: 115,
      thinking: 'all',
      toolsPreamble: TOOLS_PREAMBLE_TOKENS,
    };
  }
  switch (id.provider) {
    case 'openai':
      return {
        encoding: openAiEncoding(id.name),
        marginPercent: TOKEN_MARGIN_PERCENT.openai,
        thinking: THINKING_REPLAY.openai,
        toolsPreamble: TOOLS_PREAMBLE_TOKENS,
      };
    case 'anthropic':
      return {
        encoding: 'o200k_base',
        marginPercent: TOKEN_MARGIN_PERCENT.anthropic,
        thinking: THINKING_REPLAY.anthropic,
        toolsPreamble: ANTHROPIC_TOOLS_PREAMBLE_TOKENS,
      };
    case 'openai-compatible':
      return {
        encoding: 'o200k_base',
        marginPercent: TOKEN_MARGIN_PERCENT['openai-compatible'],
        thinking: THINKING_REPLAY['openai-compatible'],
        toolsPreamble: TOOLS_PREAMBLE_TOKENS,
      };
    case 'mock':
      return {
        encoding: 'o200k_base',
        marginPercent: TOKEN_MARGIN_PERCENT.mock,
        thinking: 'all',
        toolsPreamble: TOOLS_PREAMBLE_TOKENS,
      };
  }
}

/** An attachment's estimate (see IMAGE_TOKENS and BYTES_PER_FILE_TOKEN). */
export function attachmentTokens(a: AttachmentBlock): number {
  // A stored file: an image as any image, anything else by its size (a text file is sent as its text).
  if (a.fileId !== undefined)
    return a.mediaType.startsWith('image/') ? IMAGE_TOKENS : Math.ceil((a.bytes ?? 0) / BYTES_PER_FILE_TOKEN);
  if (a.data === undefined && a.url === undefined) return 0; // nothing to send: message-mapping.ts drops it
  if (a.mediaType.startsWith('image/') || a.data === undefined) return IMAGE_TOKENS;
  return Math.ceil((a.data.length * 3) / 4 / BYTES_PER_FILE_TOKEN);
}

class EncodingTokenCounter implements TokenCounter {
  /**
   * Each message's count, kept as long as the message itself: a message never changes once made (a tree node's, a
   * run's), so counting a live session's path again after a run encodes only the messages that are new.
   */
  private readonly counted = new WeakMap<Message, number>();

  constructor(private readonly profile: Profile) {}

  text(text: string): number {
    return this.withMargin(this.count(text));
  }

  message(m: Message): number {
    let tokens = this.counted.get(m);
    if (tokens === undefined) {
      tokens = this.countMessage(m);
      this.counted.set(m, tokens);
    }
    return tokens;
  }

  private countMessage(m: Message): number {
    let text = 0;
    let fixed = MESSAGE_OVERHEAD_TOKENS;
    for (const block of m.content) {
      switch (block.type) {
        case 'text':
          text += this.count(block.text);
          break;
        case 'thinking':
          if (this.sendsThinking(block)) text += this.count(block.text);
          break;
        case 'tool_use':
          fixed += TOOL_BLOCK_OVERHEAD_TOKENS;
          text +=
            this.count(block.id) + this.count(block.name) + this.count(JSON.stringify(block.input) ?? '');
          break;
        case 'tool_result':
          fixed += TOOL_BLOCK_OVERHEAD_TOKENS;
          text += this.count(block.toolUseId);
          // An error result is sent as its text alone (message-mapping.ts), attachments dropped.
          if (typeof block.content === 'string' || block.isError) text += this.count(toolResultText(block));
          else {
            for (const part of block.content) {
              if (part.type === 'text') text += this.count(part.text);
              else fixed += attachmentTokens(part);
            }
          }
          break;
        case 'attachment':
          fixed += attachmentTokens(block);
          break;
      }
    }
    return fixed + this.withMargin(text);
  }

  system(system: string | null): number {
    return system === null || system === ''
      ? 0
      : MESSAGE_OVERHEAD_TOKENS + this.withMargin(this.count(system));
  }

  tools(tools: readonly ModelToolSpec[]): number {
    if (tools.length === 0) return 0;
    let total = this.profile.toolsPreamble;
    for (const t of tools) {
      const text = this.count(t.name) + this.count(t.description) + this.count(JSON.stringify(t.inputSchema));
      total += TOOL_DEFINITION_OVERHEAD_TOKENS + this.withMargin(text);
    }
    return total;
  }

  /** The encoding's own count, without the margin. */
  private count(text: string): number {
    if (text === '') return 0;
    const name = this.profile.encoding;
    return name === 'estimate'
      ? Math.ceil(text.length / ESTIMATED_CHARS_PER_TOKEN)
      : encoding(name).countTokens(text, ORDINARY_TEXT);
  }

  private sendsThinking(block: Extract<Block, { type: 'thinking' }>): boolean {
    const replay = this.profile.thinking;
    return replay === 'all' || (replay === 'signed' && block.signature !== undefined);
  }

  /** In integers: with floating point, a margin of 1.1 would make 10 tokens 12 (10 × 1.1 = 11.000000000000002). */
  private withMargin(tokens: number): number {
    return Math.ceil((tokens * this.profile.marginPercent) / 100);
  }
}

/**
 * One counter per profile (encoding, margin and the provider's rules: a handful), shared by every model string that
 * maps to it, and so are the message counts it keeps.
 */
const counters = new Map<string, TokenCounter>();

/**
 * The counter of a "provider:name" model (an unknown or malformed one: o200k_base with the 15% margin). With
 * `estimate`, text is counted as characters / 4 instead (the same overheads and margins): for counts only shown,
 * never for a limit.
 */
export function tokenCounterFor(model: string, options: { estimate?: boolean } = {}): TokenCounter {
  const profile: Profile = options.estimate
    ? { ...profileOf(model), encoding: 'estimate' }
    : profileOf(model);
  const key = `${profile.encoding}/${profile.marginPercent}/${profile.thinking}/${profile.toolsPreamble}`;
  let counter = counters.get(key);
  if (counter === undefined) {
    counter = new EncodingTokenCounter(profile);
    counters.set(key, counter);
  }
  return counter;
}
