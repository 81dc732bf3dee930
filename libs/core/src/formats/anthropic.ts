// The `anthropic` format: the active path as Anthropic Messages API content (`{model, system?, messages}`, a
// request body but for the provider's model name and max_tokens). Blocks map one to one: text, thinking (with its
// signature), tool_use, tool_result (in the user message that carries it), and attachments as image / document
// sources. Reading takes that body or a bare message array; block types Canopy has no place for (redacted
// thinking, server tool blocks) are left out.

import type { AttachmentBlock, Block, Message, TextBlock } from '../message';
import { FormatError, fieldPath, isRecord, linearTree, type Conversation } from './conversation';
import { providerModel, requireString } from './format-utils';

type Source = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };

export type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature?: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | {
      type: 'tool_result';
      tool_use_id: string;
      content: string | Array<Exclude<AnthropicBlock, { type: 'tool_result' | 'tool_use' | 'thinking' }>>;
      is_error?: boolean;
    }
  | { type: 'image'; source: Source }
  | { type: 'document'; source: Source; title?: string };

export interface AnthropicExport {
  model: string;
  system?: string;
  messages: Array<{ role: 'user' | 'assistant'; content: AnthropicBlock[] }>;
}

export function toAnthropic(
  model: string,
  system: string | null,
  messages: readonly Message[],
): AnthropicExport {
  return {
    model: providerModel(model),
    ...(system ? { system } : {}),
    messages: messages.map((m) => ({ role: m.role, content: m.content.map(toBlock) })),
  };
}

function toBlock(b: Block): AnthropicBlock {
  switch (b.type) {
    case 'text':
      return { type: 'text', text: b.text };
    case 'thinking':
      return {
        type: 'thinking',
        thinking: b.text,
        ...(b.signature !== undefined ? { signature: b.signature } : {}),
      };
    case 'tool_use':
      return { type: 'tool_use', id: b.id, name: b.name, input: b.input };
    case 'tool_result':
      return {
        type: 'tool_result',
        tool_use_id: b.toolUseId,
        content: typeof b.content === 'string' ? b.content : b.content.map((c) => toBlock(c) as never),
        ...(b.isError ? { is_error: true } : {}),
      };
    case 'attachment':
      return attachmentBlock(b);
  }
}

function attachmentBlock(a: AttachmentBlock): AnthropicBlock {
  const source: Source =
    a.url !== undefined
      ? { type: 'url', url: a.url }
      : { type: 'base64', media_type: a.mediaType, data: a.data ?? '' };
  if (a.mediaType.startsWith('image/')) return { type: 'image', source };
  return { type: 'document', source, ...(a.name ? { title: a.name } : {}) };
}

/** Reads `{model?, system?, messages}` or a bare array of Messages API messages. */
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
  list.forEach((raw, i) => {
    const at = fieldPath(listPath, i);
    if (!isRecord(raw)) throw new FormatError(at, 'expected a message object');
    if (raw.role !== 'user' && raw.role !== 'assistant') {
      throw new FormatError(
        fieldPath(at, 'role'),
        `expected "user" or "assistant", got ${JSON.stringify(raw.role)}`,
      );
    }
    const content = blocksOf(raw.content, fieldPath(at, 'content'));
    if (content.length) messages.push({ role: raw.role, content, timestamp: now });
  });
  return {
    session: { title: null, system, metadata: {}, ...(model ? { model } : {}) },
    tree: linearTree(messages),
  };
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
  content.forEach((b: unknown, i) => {
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
          id: requireString(b.id, fieldPath(bat, 'id')),
          name: requireString(b.name, fieldPath(bat, 'name')),
          input: b.input ?? {},
        });
        break;
      case 'tool_result': {
        const inner = b.content === undefined ? '' : b.content;
        out.push({
          type: 'tool_result',
          toolUseId: requireString(b.tool_use_id, fieldPath(bat, 'tool_use_id')),
          content:
            typeof inner === 'string'
              ? inner
              : blocksOf(inner, fieldPath(bat, 'content')).filter(
                  (x): x is TextBlock | AttachmentBlock => x.type === 'text' || x.type === 'attachment',
                ),
          isError: b.is_error === true,
        });
        break;
      }
      case 'image':
      case 'document':
        out.push(sourceAttachment(b, bat));
        break;
      default:
      // redacted_thinking, server_tool_use, web_search_tool_result ...: nothing Canopy keeps.
    }
  });
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
  if (source.type === 'base64' || source.type === 'text') {
    return {
      type: 'attachment',
      mediaType: requireString(source.media_type, fieldPath(sat, 'media_type')),
      data: requireString(source.data, fieldPath(sat, 'data')),
      ...name,
    };
  }
  throw new FormatError(fieldPath(sat, 'type'), `unsupported source type ${JSON.stringify(source.type)}`);
}
