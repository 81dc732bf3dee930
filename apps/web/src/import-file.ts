// What a file chosen for import holds: one conversation (a canopy document, an OpenAI or Anthropic message list,
// one ChatGPT conversation) or many (NDJSON, one per line; or a ChatGPT export's whole conversations.json array),
// and in which format, read from its shape unless the user picked one. Pure: the page sends what this answers.

import type { ImportFormat } from '@canopy/client';

export type ImportChoice = ImportFormat | 'auto';

export type ImportPlan =
  | { kind: 'one'; format: ImportFormat; data: unknown }
  | { kind: 'many'; format: ImportFormat; ndjson: string; count: number }
  | { kind: 'invalid'; message: string };

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Content block types only Anthropic's messages use. */
const ANTHROPIC_BLOCKS = new Set(['tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'document']);

function looksAnthropic(messages: unknown[]): boolean {
  return messages.some(
    (m) =>
      isRecord(m) &&
      Array.isArray(m.content) &&
      m.content.some((b) => isRecord(b) && typeof b.type === 'string' && ANTHROPIC_BLOCKS.has(b.type)),
  );
}

/** The format of one conversation, read from its shape (null: none fits). */
export function detectFormat(data: unknown): ImportFormat | null {
  if (Array.isArray(data))
    return data.every(isRecord) ? (looksAnthropic(data) ? 'anthropic' : 'openai') : null;
  if (!isRecord(data)) return null;
  if (data.format === 'canopy') return 'canopy';
  if (isRecord(data.mapping)) return 'chatgpt';
  if (Array.isArray(data.messages)) {
    if (typeof data.system === 'string' || Array.isArray(data.system)) return 'anthropic';
    return looksAnthropic(data.messages) ? 'anthropic' : 'openai';
  }
  return null;
}

const UNKNOWN =
  'The file is not a conversation Canopy can read: expected a Canopy export, an OpenAI or Anthropic message list, ' +
  'or a ChatGPT conversations.json. Pick the format if it is one of these.';

export function planImport(text: string, choice: ImportChoice): ImportPlan {
  if (!text.trim()) return { kind: 'invalid', message: 'The file is empty.' };
  let whole: unknown;
  try {
    whole = JSON.parse(text);
  } catch {
    return planLines(text, choice);
  }
  // A ChatGPT data export's conversations.json: an array of conversations, each imported on its own.
  if (
    Array.isArray(whole) &&
    whole.length > 0 &&
    (choice === 'chatgpt' || (choice === 'auto' && whole.every((c) => isRecord(c) && isRecord(c.mapping))))
  ) {
    return {
      kind: 'many',
      format: 'chatgpt',
      ndjson: whole.map((c) => JSON.stringify(c)).join('\n') + '\n',
      count: whole.length,
    };
  }
  const format = choice === 'auto' ? detectFormat(whole) : choice;
  if (!format) return { kind: 'invalid', message: UNKNOWN };
  return { kind: 'one', format, data: whole };
}

/** NDJSON: one conversation a line, all in the format of the first (or the chosen one). */
function planLines(text: string, choice: ImportChoice): ImportPlan {
  const lines = text.split('\n').map((l) => l.trim());
  const values: unknown[] = [];
  for (const [i, line] of lines.entries()) {
    if (!line) continue;
    try {
      values.push(JSON.parse(line));
    } catch {
      return {
        kind: 'invalid',
        message:
          values.length === 0 && i === lines.length - 1
            ? 'The file is not JSON.'
            : `Line ${i + 1} is not JSON: the file must be one JSON document, or one per line (NDJSON).`,
      };
    }
  }
  const format = choice === 'auto' ? detectFormat(values[0]) : choice;
  if (!format) return { kind: 'invalid', message: UNKNOWN };
  return {
    kind: 'many',
    format,
    ndjson: values.map((v) => JSON.stringify(v)).join('\n') + '\n',
    count: values.length,
  };
}

/** A canopy document without its session id: imported as a new session next to the one it was exported from. */
export function withoutSessionId(data: unknown): unknown {
  if (!isRecord(data) || !isRecord(data.session)) return data;
  const { id: _id, ...session } = data.session;
  return { ...data, session };
}
