// Small pieces the provider formats share: provider model names, attachments as data URLs (and text documents as
// base64), tool inputs given as JSON text, required strings and ids that name their field when missing.

import { jsonDepth, LIMITS } from '../api/schemas';
import type { AttachmentBlock } from '../message';
import { FormatError, isRecord } from './conversation';

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

/** A link a provider fetches itself: http(s) only. */
export function isWebUrl(url: string): boolean {
  return /^https?:\/\/./i.test(url);
}

/**
 * An attachment a format has no place for, as a line of text (what it was, and where when it is a link), so an
 * export keeps saying it was there instead of sending a block the provider refuses.
 */
export function attachmentNote(a: AttachmentBlock): string {
  const name = a.name ? `"${a.name}" ` : '';
  return `[attachment ${name}(${a.mediaType})${a.url !== undefined ? ` ${a.url}` : ''}]`;
}

/**
 * Tool arguments as OpenAI sends them: JSON text of an object (empty text: no arguments). What is no JSON, or
 * JSON of anything but an object, no provider takes back as a tool input: refused, naming the field.
 */
export function parseToolArguments(args: unknown, at: string): Record<string, unknown> {
  if (args === undefined || args === null) return {};
  let value: unknown = args;
  if (typeof args === 'string') {
    if (args.trim() === '') return {};
    try {
      value = JSON.parse(args) as unknown;
    } catch {
      throw new FormatError(at, 'not JSON (tool arguments are the JSON text of an object)');
    }
  }
  return toolInput(value, at);
}

/** A tool input as providers take it: an object (absent: no arguments), nested no deeper than Canopy stores. */
export function toolInput(value: unknown, at: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) throw new FormatError(at, 'expected an object (a tool input is a JSON object)');
  if (jsonDepth(value, LIMITS.jsonDepth + 1) > LIMITS.jsonDepth)
    throw new FormatError(at, `nested deeper than ${LIMITS.jsonDepth} levels`);
  return value;
}

/**
 * A stored tool input as an object for an export. Canopy only stores objects from now on; an older conversation
 * may hold another value (text that was no JSON): it travels under `value` rather than as a malformed input.
 */
export function toolInputObject(input: unknown): Record<string, unknown> {
  if (input === undefined || input === null) return {};
  return isRecord(input) ? input : { value: input };
}

export function requireString(v: unknown, at: string): string {
  if (typeof v !== 'string') throw new FormatError(at, 'expected a string');
  return v;
}

/** A tool call's id or name: a non-empty string of at most `max` characters. */
export function requireId(v: unknown, at: string, max = 256): string {
  const s = requireString(v, at);
  if (s === '' || s.length > max) throw new FormatError(at, `expected 1 to ${max} characters`);
  return s;
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64_INDEX: number[] = new Array<number>(128).fill(-1);
for (let i = 0; i < BASE64.length; i++) BASE64_INDEX[BASE64.charCodeAt(i)] = i;

/** Text as base64 of its UTF-8 bytes (an attachment's `data`); linear, no platform API (the core is isomorphic). */
export function textToBase64(text: string): string {
  const bytes: number[] = [];
  for (const ch of text) {
    let c = ch.codePointAt(0)!;
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd; // a lone surrogate has no UTF-8 form
    if (c < 0x80) bytes.push(c);
    else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  const out: string[] = [];
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out.push(
      BASE64[(n >> 18) & 63]!,
      BASE64[(n >> 12) & 63]!,
      i + 1 < bytes.length ? BASE64[(n >> 6) & 63]! : '=',
      i + 2 < bytes.length ? BASE64[n & 63]! : '=',
    );
  }
  return out.join('');
}

/** Base64 of UTF-8 text back to the text; null when it is not base64 or not UTF-8 (the data is no text). */
export function base64ToText(data: string): string | null {
  const clean = data.replace(/=+$/, '');
  if (clean.length % 4 === 1) return null;
  const bytes: number[] = [];
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < clean.length; i++) {
    const v = BASE64_INDEX[clean.charCodeAt(i)] ?? -1;
    if (v < 0) return null;
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((acc >> bits) & 0xff);
    }
  }
  const out: string[] = [];
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i]!;
    // The sequence's length, the least code point it may encode (shorter forms are invalid), its first bits.
    const [need, min, first] =
      b < 0x80
        ? [0, 0, b]
        : b >= 0xc2 && b < 0xe0
          ? [1, 0x80, b & 31]
          : b >= 0xe0 && b < 0xf0
            ? [2, 0x800, b & 15]
            : b >= 0xf0 && b < 0xf5
              ? [3, 0x10000, b & 7]
              : [-1, 0, 0];
    if (need < 0 || i + need >= bytes.length) return null;
    let c = first;
    for (let k = 1; k <= need; k++) {
      const next = bytes[i + k];
      if (next === undefined || (next & 0xc0) !== 0x80) return null;
      c = (c << 6) | (next & 63);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return null;
    out.push(String.fromCodePoint(c));
    i += need + 1;
  }
  return out.join('');
}
