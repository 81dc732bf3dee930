// The `anthropic` format: the active path as an Anthropic Messages API request (`{model, max_tokens, system?,
// messages}`: the session's model without its provider prefix, max_tokens the session's `opts.maxTokens`).
// Blocks map one to one: text, thinking (signed; the API takes back no other), tool_use, tool_result, and
// attachments as image / document sources (one the API has no source for is named in text). The path is shaped
// as the API takes it (provider-path.ts): roles alternate, consecutive messages of a role merged into one, a
// user message's tool results first and each answering a tool_use of the message before, calls without a result
// and results without a call left out, ids unique in the API's alphabet, inputs objects. Reading takes that body
// or a bare message array and refuses what no export could make a valid request of; block types Canopy has no
// place for (redacted thinking, server tool blocks) are left out.

import type { AttachmentBlock, Block, Message, Role, TextBlock, ToolResultBlock } from '../message';
import { FormatError, fieldPath, isRecord, linearTree, type Conversation } from './conversation';
import {
  attachmentNote,
  base64ToText,
  isWebUrl,
  providerModel,
  requireId,
  requireString,
  textToBase64,
  toolInput,
  toolInputObject,
} from './format-utils';
import { providerTurns } from './provider-path';

type Source =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'text'; media_type: 'text/plain'; data: string }
  | { type: 'url'; url: string };

type ToolResultContent =
  | { type: 'text'; text: string }
  | { type: 'image'; source: Source }
  | { type: 'document'; source: Source; title?: string };

export type AnthropicBlock =
  | ToolResultContent
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string | ToolResultContent[]; is_error?: boolean };

export interface AnthropicExport {
  model: string;
  max_tokens: number;
  system?: string;
  messages: Array<{ role: 'user' | 'assistant'; content: AnthropicBlock[] }>;
}

/** The `max_tokens` of an export whose session sets no `opts.maxTokens` (the request requires one). */
export const ANTHROPIC_EXPORT_MAX_TOKENS = 4096;

/** The alphabet of Anthropic's tool ids: other characters become `_`. */
const fitToolId = (id: string) => id.replace(/[^A-Za-z0-9_-]/g, '_');

export function toAnthropic(
  model: string,
  system: string | null,
  messages: readonly Message[],
  options: { maxTokens?: number } = {},
): AnthropicExport {
  const out: AnthropicExport['messages'] = [];
  for (const turn of providerTurns(messages, { thinking: 'signed', fitToolId })) {
    const content: AnthropicBlock[] = [];
    // A user turn's tool results come first, as the API requires; then the rest, message by message.
    for (const r of turn.results) content.push(resultBlock(r));
    for (const blocks of turn.messages) {
      for (const b of blocks) {
        // An assistant message carries no images or documents: an attachment there is named in text.
        content.push(
          b.type === 'attachment' && turn.role === 'assistant'
            ? { type: 'text', text: attachmentNote(b) }
            : toBlock(b),
        );
      }
    }
    out.push({ role: turn.role, content });
  }
  // The last assistant message is where the reply would continue: the API refuses it ending in whitespace.
  const last = out.at(-1);
  const tail = last?.role === 'assistant' ? last.content.at(-1) : undefined;
  if (tail?.type === 'text') last!.content[last!.content.length - 1] = { ...tail, text: tail.text.trimEnd() };
  const maxTokens = options.maxTokens;
  return {
    model: providerModel(model),
    max_tokens:
      maxTokens !== undefined && Number.isInteger(maxTokens) && maxTokens >= 1
        ? maxTokens
        : ANTHROPIC_EXPORT_MAX_TOKENS,
    ...(system && system.trim() !== '' ? { system } : {}),
    messages: out,
  };
}

function toBlock(b: Block): AnthropicBlock {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text };
    case 'thinking':
      return { type: 'thinking', thinking: b.text, signature: b.signature ?? '' };
    case 'tool_use':
      return { type: 'tool_use', id: b.id, name: b.name, input: toolInputObject(b.input) };
    case 'tool_result':
      return resultBlock(b);
    case 'attachment':
      return attachmentBlock(b);
  }
}

function resultBlock(b: ToolResultBlock): AnthropicBlock {
  let content: string | ToolResultContent[] = '';
  if (typeof b.content === 'string') content = b.content;
  else {
    const blocks: ToolResultContent[] = [];
    for (const c of b.content) {
      if (c.type === 'attachment') blocks.push(attachmentBlock(c));
      else if (c.text.trim() !== '') blocks.push({ type: 'text', text: c.text });
    }
    if (blocks.length) content = blocks;
  }
  return { type: 'tool_result', tool_use_id: b.toolUseId, content, ...(b.isError ? { is_error: true } : {}) };
}

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/**
 * An attachment as the API takes one: an image (JPEG, PNG, GIF, WebP data, or an http(s) link), a PDF (data or a
 * link), a text document (UTF-8 data); anything else is named in a text block.
 */
function attachmentBlock(a: AttachmentBlock): ToolResultContent {
  const title = a.name ? { title: a.name } : {};
  if (a.url !== undefined) {
    if (!isWebUrl(a.url)) return { type: 'text', text: attachmentNote(a) };
    if (a.mediaType.startsWith('image/')) return { type: 'image', source: { type: 'url', url: a.url } };
    return { type: 'document', source: { type: 'url', url: a.url }, ...title };
  }
  const data = a.data ?? '';
  if (IMAGE_TYPES.has(a.mediaType))
    return { type: 'image', source: { type: 'base64', media_type: a.mediaType, data } };
  if (a.mediaType === 'application/pdf')
    return { type: 'document', source: { type: 'base64', media_type: a.mediaType, data }, ...title };
  if (a.mediaType.startsWith('text/')) {
    const text = base64ToText(data);
    if (text !== null)
      return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: text }, ...title };
  }
  return { type: 'text', text: attachmentNote(a) };
}

/**
 * Reads `{model?, system?, messages}` or a bare array of Messages API messages. Consecutive messages of a role
 * form one turn (as the API combines them): a tool_result must answer a tool_use of the assistant turn just
 * before it, once, and every tool_use but those of the last turn must be answered in the next one; a tool_use
 * sits in an assistant message with an object input, a tool_result in a user message. What breaks these is
 * refused, naming the message, since no export of it would be a request the API takes.
 */
export function fromAnthropic(data: unknown, now: number, base = 'data'): Conversation {
  let list: unknown = data;
  let listPath = base;
  let model: string | undefined;
  let system: string | null = null;
  if (isRecord(data)) {
    list = data.messages;
    listPath = fieldPath(base, 'messages');
    if (typeof data.model === 'string' && data.model) model = `anthropic:${data.model}`;
    if (data.system !== undefined && data.system !== null)
      system = systemText(data.system, fieldPath(base, 'system'));
  }
  if (!Array.isArray(list)) throw new FormatError(listPath, 'expected an array of messages');
  const messages: Message[] = [];
  const pairing = new ToolPairing();
  for (let i = 0; i < list.length; i++) {
    const raw: unknown = list[i];
    const at = fieldPath(listPath, i);
    if (!isRecord(raw)) throw new FormatError(at, 'expected a message object');
    if (raw.role !== 'user' && raw.role !== 'assistant') {
      throw new FormatError(
        fieldPath(at, 'role'),
        `expected "user" or "assistant", got ${JSON.stringify(raw.role)}`,
      );
    }
    const contentAt = fieldPath(at, 'content');
    const content = blocksOf(raw.content, contentAt);
    if (content.length === 0) continue;
    pairing.message(raw.role, content, contentAt);
    messages.push({ role: raw.role, content, timestamp: now });
  }
  pairing.end();
  return {
    session: { title: null, system, metadata: {}, ...(model ? { model } : {}) },
    tree: linearTree(messages),
  };
}

/** The tool rounds of an Anthropic conversation, turn by turn, refusing what the API would. */
class ToolPairing {
  private role: Role | null = null;
  /** The calls of the assistant turn being read, or of the one before the user turn being read. */
  private calls = new Map<string, { at: string; answered: boolean }>();

  message(role: Role, content: readonly Block[], at: string): void {
    if (role !== this.role) {
      if (role === 'assistant') {
        if (this.role === 'user') this.requireAnswered();
        this.calls = new Map();
      }
      this.role = role;
    }
    content.forEach((b, j) => {
      const bat = fieldPath(at, j);
      if (role === 'user' && (b.type === 'tool_use' || b.type === 'thinking'))
        throw new FormatError(fieldPath(bat, 'type'), `a ${b.type} block belongs in an assistant message`);
      if (role === 'assistant' && b.type === 'tool_result')
        throw new FormatError(fieldPath(bat, 'type'), 'a tool_result block belongs in a user message');
      if (b.type === 'tool_use') {
        if (this.calls.has(b.id))
          throw new FormatError(fieldPath(bat, 'id'), `duplicate tool_use id ${JSON.stringify(b.id)}`);
        this.calls.set(b.id, { at: bat, answered: false });
      } else if (b.type === 'tool_result') {
        const call = this.calls.get(b.toolUseId);
        const idAt = fieldPath(bat, 'tool_use_id');
        if (!call)
          throw new FormatError(
            idAt,
            `no tool_use ${JSON.stringify(b.toolUseId)} in the assistant message before it (a tool_result answers one)`,
          );
        if (call.answered)
          throw new FormatError(idAt, `tool_use ${JSON.stringify(b.toolUseId)} is already answered`);
        call.answered = true;
      }
    });
  }

  /** The last turn: a user turn must have answered the calls before it; an assistant turn's calls may wait. */
  end(): void {
    if (this.role === 'user') this.requireAnswered();
  }

  private requireAnswered(): void {
    for (const [id, call] of this.calls) {
      if (!call.answered)
        throw new FormatError(
          call.at,
          `tool_use ${JSON.stringify(id)} has no tool_result in the user message after it`,
        );
    }
  }
}

function systemText(system: unknown, at: string): string {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) throw new FormatError(at, 'expected a string or an array of text blocks');
  return system
    .map((b: unknown, i) => (isRecord(b) ? requireString(b.text, fieldPath(fieldPath(at, i), 'text')) : ''))
    .join('\n\n');
}

function blocksOf(content: unknown, at: string): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw new FormatError(at, 'expected a string or an array of blocks');
  const out: Block[] = [];
  for (let i = 0; i < content.length; i++) {
    const b: unknown = content[i];
    const bat = fieldPath(at, i);
    if (!isRecord(b)) throw new FormatError(bat, 'expected a content block');
    switch (b.type) {
      case 'text':
        out.push({ type: 'text', text: requireString(b.text, fieldPath(bat, 'text')) });
        break;
      case 'thinking':
        out.push({
          type: 'thinking',
          text: requireString(b.thinking, fieldPath(bat, 'thinking')),
          ...(typeof b.signature === 'string' ? { signature: b.signature } : {}),
        });
        break;
      case 'tool_use':
        out.push({
          type: 'tool_use',
          id: requireId(b.id, fieldPath(bat, 'id')),
          name: requireId(b.name, fieldPath(bat, 'name'), 200),
          input: toolInput(b.input, fieldPath(bat, 'input')),
        });
        break;
      case 'tool_result':
        out.push({
          type: 'tool_result',
          toolUseId: requireId(b.tool_use_id, fieldPath(bat, 'tool_use_id')),
          content: resultContentOf(b.content, fieldPath(bat, 'content')),
          isError: b.is_error === true,
        });
        break;
      case 'image':
      case 'document':
        out.push(sourceAttachment(b, bat));
        break;
      default:
      // redacted_thinking, server_tool_use, web_search_tool_result ...: nothing Canopy keeps.
    }
  }
  return out;
}

/** A tool_result's content: text, or text, image and document blocks (others are left out; nothing nests). */
function resultContentOf(content: unknown, at: string): string | Array<TextBlock | AttachmentBlock> {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new FormatError(at, 'expected a string or an array of blocks');
  const out: Array<TextBlock | AttachmentBlock> = [];
  for (let i = 0; i < content.length; i++) {
    const b: unknown = content[i];
    const bat = fieldPath(at, i);
    if (!isRecord(b)) throw new FormatError(bat, 'expected a content block');
    if (b.type === 'text') out.push({ type: 'text', text: requireString(b.text, fieldPath(bat, 'text')) });
    else if (b.type === 'image' || b.type === 'document') out.push(sourceAttachment(b, bat));
  }
  return out;
}

function sourceAttachment(b: Record<string, unknown>, at: string): AttachmentBlock {
  const source = b.source;
  const sat = fieldPath(at, 'source');
  if (!isRecord(source)) throw new FormatError(sat, 'expected a source');
  const name = typeof b.title === 'string' ? { name: b.title } : {};
  if (source.type === 'url') {
    const fallback = b.type === 'image' ? 'image/*' : 'application/pdf';
    return {
      type: 'attachment',
      mediaType: fallback,
      url: requireString(source.url, fieldPath(sat, 'url')),
      ...name,
    };
  }
  if (source.type === 'base64') {
    return {
      type: 'attachment',
      mediaType: requireString(source.media_type, fieldPath(sat, 'media_type')),
      data: requireString(source.data, fieldPath(sat, 'data')),
      ...name,
    };
  }
  if (source.type === 'text') {
    // A plain text document carries its text as is; an attachment keeps base64.
    return {
      type: 'attachment',
      mediaType: requireString(source.media_type, fieldPath(sat, 'media_type')),
      data: textToBase64(requireString(source.data, fieldPath(sat, 'data'))),
      ...name,
    };
  }
  throw new FormatError(fieldPath(sat, 'type'), `unsupported source type ${JSON.stringify(source.type)}`);
}
