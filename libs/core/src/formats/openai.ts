// The `openai` format: the active path as OpenAI Chat Completions messages (`{model, messages}`, a request body
// but for the provider's own model name): the system prompt first, user text and attachments (image_url / file
// parts), assistant text with `tool_calls`, and each tool result as a `tool` message right after the assistant
// message that made the call. The path is shaped as the provider takes it (provider-path.ts): consecutive
// assistant messages become one, calls without a result and results without a call are left out, arguments are
// the JSON text of an object. Thinking has no place in this format and is left out; an attachment it cannot
// carry (a linked file) is named in text. Reading takes that body or a bare message array and gives a linear
// conversation, refusing what no export could make a valid request of; consecutive tool messages become one user
// message of tool results (Canopy's shape).

import type { AttachmentBlock, Block, Message, TextBlock, ToolResultBlock, ToolUseBlock } from '../message';
import { FormatError, fieldPath, isRecord, linearTree, type Conversation } from './conversation';
import {
  attachmentFromDataUrl,
  attachmentNote,
  attachmentToDataUrl,
  isWebUrl,
  parseToolArguments,
  providerModel,
  requireId,
  requireString,
  toolInputObject,
} from './format-utils';
import { providerTurns } from './provider-path';

export type OpenAiContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string } }
  | { type: 'file'; file: { filename?: string; file_data: string } };

export interface OpenAiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type OpenAiMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | OpenAiContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: OpenAiToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface OpenAiExport {
  model: string;
  messages: OpenAiMessage[];
}

export function toOpenAi(model: string, system: string | null, messages: readonly Message[]): OpenAiExport {
  const out: OpenAiMessage[] = [];
  if (system) out.push({ role: 'system', content: system });
  for (const turn of providerTurns(messages, { thinking: 'none', fitToolId: (id) => id })) {
    if (turn.role === 'assistant') {
      out.push(assistantMessage(turn.messages));
      continue;
    }
    for (const r of turn.results)
      out.push({ role: 'tool', tool_call_id: r.toolUseId, content: resultText(r) });
    for (const blocks of turn.messages) {
      const parts = blocks.map(toPart);
      const only = parts.length === 1 ? parts[0]! : null;
      out.push({ role: 'user', content: only?.type === 'text' ? only.text : parts });
    }
  }
  return { model: providerModel(model), messages: out };
}

/** An assistant turn as one message: its text, then its calls (the tool messages answering them follow it). */
function assistantMessage(messages: readonly Block[][]): OpenAiMessage {
  const text: string[] = [];
  const calls: OpenAiToolCall[] = [];
  for (const blocks of messages) {
    for (const b of blocks) {
      if (b.type === 'text') text.push(b.text);
      else if (b.type === 'attachment') text.push(attachmentNote(b));
      else if (b.type === 'tool_use') {
        calls.push({
          id: b.id,
          type: 'function',
          function: { name: b.name, arguments: JSON.stringify(toolInputObject(b.input)) },
        });
      }
    }
  }
  const content = text.join('\n\n');
  return {
    role: 'assistant',
    content: content === '' && calls.length ? null : content,
    ...(calls.length ? { tool_calls: calls } : {}),
  };
}

function resultText(r: ToolResultBlock): string {
  if (typeof r.content === 'string') return r.content;
  return r.content
    .map((c) => (c.type === 'text' ? c.text : attachmentNote(c)))
    .filter((t) => t !== '')
    .join('\n\n');
}

function toPart(b: Block): OpenAiContentPart {
  if (b.type === 'text') return { type: 'text', text: b.text };
  const a = b as AttachmentBlock;
  // An image is data or an http(s) link; a file part carries data only: any other link is named in text.
  if (a.url !== undefined) {
    return a.mediaType.startsWith('image/') && isWebUrl(a.url)
      ? { type: 'image_url', image_url: { url: a.url } }
      : { type: 'text', text: attachmentNote(a) };
  }
  // Data travels as a data URL, which only a plain `type/subtype` fits.
  if (!/^[\w.+-]+\/[\w.+*-]+$/.test(a.mediaType)) return { type: 'text', text: attachmentNote(a) };
  if (a.mediaType.startsWith('image/'))
    return { type: 'image_url', image_url: { url: attachmentToDataUrl(a) } };
  return {
    type: 'file',
    file: { ...(a.name ? { filename: a.name } : {}), file_data: attachmentToDataUrl(a) },
  };
}

/**
 * Reads `{model?, messages}` or a bare array of Chat Completions messages. Tool messages must answer a call of the
 * assistant message just before them (only tool messages between), each call once, and every call but those of
 * the last message must be answered before the next message; arguments must be the JSON text of an object. What
 * breaks these is refused, naming the message, since no export of it would be a request the provider takes.
 */
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
  // The calls of the assistant message the tool messages now read answer: id -> where it was made, answered.
  let open: Map<string, { at: string; answered: boolean }> | null = null;
  let legacyCall: string | null = null;
  const flush = () => {
    if (pendingResults.length) messages.push({ role: 'user', content: pendingResults, timestamp: now });
    pendingResults = [];
  };
  for (let i = 0; i < list.length; i++) {
    const raw: unknown = list[i];
    const at = fieldPath(listPath, i);
    if (!isRecord(raw)) throw new FormatError(at, 'expected a message object');
    const role = raw.role;
    if (role === 'tool' || role === 'function') {
      let id: string;
      if (role === 'tool') {
        const idAt = fieldPath(at, 'tool_call_id');
        id = requireId(raw.tool_call_id, idAt);
        const call = open?.get(id);
        if (!call)
          throw new FormatError(
            idAt,
            `no tool call ${JSON.stringify(id)} in the assistant message before it (a tool message answers one)`,
          );
        if (call.answered) throw new FormatError(idAt, `tool call ${JSON.stringify(id)} is already answered`);
        call.answered = true;
      } else {
        const call = legacyCall === null ? undefined : open?.get(legacyCall);
        if (legacyCall === null || !call || call.answered)
          throw new FormatError(fieldPath(at, 'name'), 'a function result with no function call before it');
        id = legacyCall;
        call.answered = true;
      }
      pendingResults.push({
        type: 'tool_result',
        toolUseId: id,
        content: textOf(raw.content, fieldPath(at, 'content')),
        isError: false,
      });
      continue;
    }
    flush();
    if (open) {
      for (const [id, call] of open) {
        if (!call.answered)
          throw new FormatError(
            call.at,
            `tool call ${JSON.stringify(id)} has no tool message answering it before the next message`,
          );
      }
    }
    open = null;
    legacyCall = null;
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
      const calls = new Map<string, { at: string; answered: boolean }>();
      if (raw.tool_calls !== undefined && raw.tool_calls !== null) {
        const callsAt = fieldPath(at, 'tool_calls');
        if (!Array.isArray(raw.tool_calls)) throw new FormatError(callsAt, 'expected an array');
        for (let j = 0; j < raw.tool_calls.length; j++) {
          const call: unknown = raw.tool_calls[j];
          const cat = fieldPath(callsAt, j);
          if (!isRecord(call) || !isRecord(call.function))
            throw new FormatError(cat, 'expected {id, function: {name, arguments}}');
          const id = requireId(call.id, fieldPath(cat, 'id'));
          if (calls.has(id))
            throw new FormatError(fieldPath(cat, 'id'), `duplicate tool call id ${JSON.stringify(id)}`);
          calls.set(id, { at: cat, answered: false });
          content.push(toolUse(id, call.function, fieldPath(cat, 'function')));
        }
      }
      if (isRecord(raw.function_call)) {
        legacyCall = `call_${messages.length + 1}`;
        while (calls.has(legacyCall)) legacyCall += '_';
        calls.set(legacyCall, { at: fieldPath(at, 'function_call'), answered: false });
        content.push(toolUse(legacyCall, raw.function_call, fieldPath(at, 'function_call')));
      }
      if (calls.size) open = calls;
      if (content.length) messages.push({ role: 'assistant', content, timestamp: now });
    } else {
      throw new FormatError(fieldPath(at, 'role'), `unknown role ${JSON.stringify(role)}`);
    }
  }
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
  const name = requireId(fn.name, fieldPath(at, 'name'), 200);
  return { type: 'tool_use', id, name, input: parseToolArguments(fn.arguments, fieldPath(at, 'arguments')) };
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
