// The `openai` format: the active path as OpenAI Chat Completions messages (`{model, messages}`, a request body
// but for the provider's own model name): the system prompt first, user text and attachments (image_url / file
// parts), assistant text with `tool_calls`, and each tool result as a `tool` message. Reading takes that body or
// a bare message array and gives a linear conversation; consecutive tool messages become one user message of
// tool results (Canopy's shape). Thinking has no place in this format and is left out.

import type { AttachmentBlock, Block, Message, TextBlock, ToolResultBlock, ToolUseBlock } from '../message';
import { joinText, toolResultText } from '../message';
import { FormatError, fieldPath, isRecord, linearTree, type Conversation } from './conversation';
import {
  attachmentFromDataUrl,
  attachmentToDataUrl,
  parseToolInput,
  providerModel,
  requireString,
} from './format-utils';

export type OpenAiContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string } }
  | { type: 'file'; file: { filename?: string; file_data: string } };

export type OpenAiMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | OpenAiContentPart[] }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
    }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface OpenAiExport {
  model: string;
  messages: OpenAiMessage[];
}

export function toOpenAi(model: string, system: string | null, messages: readonly Message[]): OpenAiExport {
  const out: OpenAiMessage[] = [];
  if (system) out.push({ role: 'system', content: system });
  for (const m of messages) {
    if (m.role === 'assistant') {
      const text = joinText(m.content);
      const calls = m.content.filter((b): b is ToolUseBlock => b.type === 'tool_use');
      out.push({
        role: 'assistant',
        content: text === '' && calls.length ? null : text,
        ...(calls.length
          ? {
              tool_calls: calls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: JSON.stringify(c.input ?? {}) },
              })),
            }
          : {}),
      });
      continue;
    }
    for (const r of m.content.filter((b): b is ToolResultBlock => b.type === 'tool_result')) {
      out.push({ role: 'tool', tool_call_id: r.toolUseId, content: toolResultText(r) });
    }
    const rest = m.content.filter((b) => b.type === 'text' || b.type === 'attachment');
    if (rest.length === 0) continue;
    if (rest.length === 1 && rest[0]!.type === 'text') {
      out.push({ role: 'user', content: rest[0]!.text });
      continue;
    }
    out.push({ role: 'user', content: rest.map(toPart) });
  }
  return { model: providerModel(model), messages: out };
}

function toPart(b: Block): OpenAiContentPart {
  if (b.type === 'text') return { type: 'text', text: b.text };
  const a = b as AttachmentBlock;
  if (a.mediaType.startsWith('image/') || a.url !== undefined)
    return { type: 'image_url', image_url: { url: a.url ?? attachmentToDataUrl(a) } };
  return {
    type: 'file',
    file: { ...(a.name ? { filename: a.name } : {}), file_data: attachmentToDataUrl(a) },
  };
}

/** Reads `{model?, messages}` or a bare array of Chat Completions messages. */
export function fromOpenAi(data: unknown, now: number, base = 'data'): Conversation & { model?: string } {
  let list: unknown = data;
  let listPath = base;
  let model: string | undefined;
  if (isRecord(data)) {
    list = data.messages;
    listPath = fieldPath(base, 'messages');
    if (typeof data.model === 'string' && data.model) model = `openai:${data.model}`;
  }
  if (!Array.isArray(list)) throw new FormatError(listPath, 'expected an array of messages');
  const system: string[] = [];
  const messages: Message[] = [];
  let pendingResults: ToolResultBlock[] = [];
  let lastCallId: string | null = null;
  const flush = () => {
    if (pendingResults.length) messages.push({ role: 'user', content: pendingResults, timestamp: now });
    pendingResults = [];
  };
  list.forEach((raw, i) => {
    const at = fieldPath(listPath, i);
    if (!isRecord(raw)) throw new FormatError(at, 'expected a message object');
    const role = raw.role;
    if (role === 'tool' || role === 'function') {
      const id =
        role === 'tool' ? requireString(raw.tool_call_id, fieldPath(at, 'tool_call_id')) : lastCallId;
      if (!id)
        throw new FormatError(fieldPath(at, 'name'), 'a function result with no function call before it');
      pendingResults.push({
        type: 'tool_result',
        toolUseId: id,
        content: textOf(raw.content, fieldPath(at, 'content')),
        isError: false,
      });
      return;
    }
    flush();
    if (role === 'system' || role === 'developer') {
      system.push(textOf(raw.content, fieldPath(at, 'content')));
    } else if (role === 'user') {
      const content = userContent(raw.content, fieldPath(at, 'content'));
      if (content.length) messages.push({ role: 'user', content, timestamp: now });
    } else if (role === 'assistant') {
      const content: Block[] = [];
      const text =
        raw.content === null || raw.content === undefined
          ? ''
          : textOf(raw.content, fieldPath(at, 'content'));
      if (text) content.push({ type: 'text', text });
      if (typeof raw.refusal === 'string' && raw.refusal) content.push({ type: 'text', text: raw.refusal });
      if (raw.tool_calls !== undefined && raw.tool_calls !== null) {
        if (!Array.isArray(raw.tool_calls))
          throw new FormatError(fieldPath(at, 'tool_calls'), 'expected an array');
        raw.tool_calls.forEach((call: unknown, j) => {
          const cat = fieldPath(fieldPath(at, 'tool_calls'), j);
          if (!isRecord(call) || !isRecord(call.function))
            throw new FormatError(cat, 'expected {id, function: {name, arguments}}');
          const id = requireString(call.id, fieldPath(cat, 'id'));
          content.push(toolUse(id, call.function, fieldPath(cat, 'function')));
          lastCallId = id;
        });
      }
      if (isRecord(raw.function_call)) {
        lastCallId = `call_${messages.length + 1}`;
        content.push(toolUse(lastCallId, raw.function_call, fieldPath(at, 'function_call')));
      }
      if (content.length) messages.push({ role: 'assistant', content, timestamp: now });
    } else {
      throw new FormatError(fieldPath(at, 'role'), `unknown role ${JSON.stringify(role)}`);
    }
  });
  flush();
  return {
    session: {
      title: null,
      system: system.length ? system.join('\n\n') : null,
      metadata: {},
      ...(model ? { model } : {}),
    },
    tree: linearTree(messages),
    ...(model ? { model } : {}),
  };
}

function toolUse(id: string, fn: Record<string, unknown>, at: string): ToolUseBlock {
  const name = requireString(fn.name, fieldPath(at, 'name'));
  return { type: 'tool_use', id, name, input: parseToolInput(fn.arguments) };
}

/** A message's content as text: a string, or the text of its text parts. */
function textOf(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new FormatError(at, 'expected a string or an array of parts');
  return content
    .map((p: unknown, i) => {
      if (!isRecord(p)) throw new FormatError(fieldPath(at, i), 'expected a content part');
      return p.type === 'text' || p.type === 'input_text' || p.type === 'output_text'
        ? requireString(p.text, fieldPath(fieldPath(at, i), 'text'))
        : '';
    })
    .filter((t) => t !== '')
    .join('\n\n');
}

function userContent(content: unknown, at: string): Array<TextBlock | AttachmentBlock> {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw new FormatError(at, 'expected a string or an array of parts');
  const blocks: Array<TextBlock | AttachmentBlock> = [];
  content.forEach((p: unknown, i) => {
    const pat = fieldPath(at, i);
    if (!isRecord(p)) throw new FormatError(pat, 'expected a content part');
    if (p.type === 'text') blocks.push({ type: 'text', text: requireString(p.text, fieldPath(pat, 'text')) });
    else if (p.type === 'image_url') {
      const url = isRecord(p.image_url) ? p.image_url.url : p.image_url;
      blocks.push(attachmentFromDataUrl(requireString(url, fieldPath(pat, 'image_url')), 'image/*'));
    } else if (p.type === 'file' && isRecord(p.file)) {
      const file = p.file;
      const attachment = attachmentFromDataUrl(
        requireString(file.file_data, fieldPath(fieldPath(pat, 'file'), 'file_data')),
        'application/octet-stream',
      );
      blocks.push(typeof file.filename === 'string' ? { ...attachment, name: file.filename } : attachment);
    }
    // Other part types (audio, and whatever the provider adds next) carry nothing Canopy stores: left out.
  });
  return blocks;
}
