// Small pieces the provider formats share: provider model names, attachments as data URLs, tool inputs given as
// JSON text, required strings that name their field when missing.

import type { AttachmentBlock } from '../message';
import { FormatError } from './conversation';

/** `openai:gpt-4o` -> `gpt-4o` (a model name without a provider stays as it is). */
export function providerModel(model: string): string {
  const i = model.indexOf(':');
  return i >= 0 ? model.slice(i + 1) : model;
}

export function attachmentToDataUrl(a: AttachmentBlock): string {
  return a.url ?? `data:${a.mediaType};base64,${a.data ?? ''}`;
}

/** A `data:` URL becomes inline data; any other URL stays a URL (with the media type given). */
export function attachmentFromDataUrl(url: string, mediaType: string): AttachmentBlock {
  const m = /^data:([^;,]+)?(;base64)?,(.*)$/s.exec(url);
  if (m && m[2]) return { type: 'attachment', mediaType: m[1] ?? mediaType, data: m[3] ?? '' };
  return { type: 'attachment', mediaType, url };
}

/** Tool arguments as providers send them (JSON text); text that is no JSON is kept as the string it is. */
export function parseToolInput(args: unknown): unknown {
  if (typeof args !== 'string') return args ?? {};
  if (args.trim() === '') return {};
  try {
    return JSON.parse(args) as unknown;
  } catch {
    return args;
  }
}

export function requireString(v: unknown, at: string): string {
  if (typeof v !== 'string') throw new FormatError(at, 'expected a string');
  return v;
}
