// The CPU-heavy half of an import, as one pure function of the bytes received: parse the JSON, check the request
// (POST /v1/sessions/import's body) or take one NDJSON line, convert the conversation from its format, sum its
// usage and cut its nodes into batches of JSON text ready for the store. It runs on the import thread
// (import-conversion.worker.ts) for large bodies, so a 20 MB document never holds the event loop that serves
// other tenants, and inline for small ones. Everything it answers is plain data (strings, numbers, small
// objects): the thread's answer crosses back as a copy of strings, never a graph of 100,000 objects to rebuild.

import {
  essentialCursorsOf,
  FormatError,
  fromAnthropic,
  fromCanopyDocument,
  fromChatGpt,
  fromOpenAi,
  importSchema,
  sumUsage,
  type Conversation,
  type ConversationSession,
  type ConversationFile,
  type ConversationSummary,
  type NodeId,
  type Usage,
} from '@canopy/core';

export type ImportFormat = 'canopy' | 'openai' | 'anthropic' | 'chatgpt';

/** What POST /v1/sessions/import's body says besides the conversation (the NDJSON import has them as query). */
export interface ImportOptions {
  format: ImportFormat;
  userId?: string;
  /** Merged over the conversation's own metadata. */
  metadata?: Record<string, unknown>;
  model?: string;
}

/** What to prepare: a whole request body, or one NDJSON line with the options of the query. */
export type PreparationInput =
  | { kind: 'request'; body: Uint8Array | string; now: number; batchNodes: number }
  | { kind: 'line'; text: string; options: ImportOptions; now: number; batchNodes: number };

/** A conversation ready to store. */
export interface PreparedImport {
  options: ImportOptions;
  session: ConversationSession;
  /** Nodes in id order, as JSON arrays of at most batchNodes nodes each (each node's parent in an earlier one or its own). */
  batches: string[];
  nodes: number;
  usage: Usage;
  path: NodeId[];
  cursors: Record<string, NodeId>;
  nextId: NodeId;
  /** The context summaries of its nodes (canopy documents carry them). */
  summaries: ConversationSummary[];
  /** The stored files its attachments refer to, with their bytes (canopy documents carry them). */
  files: ConversationFile[];
}

/** Why not: the body is not JSON, the request failed its schema (issues as the validation pipe names them), or the conversation its format. */
export type PreparationError =
  | { kind: 'json'; message: string }
  | { kind: 'invalid'; issues: Array<{ path: string; message: string }> }
  | { kind: 'format'; field: string; message: string };

export type PreparationResult =
  { ok: true; prepared: PreparedImport } | { ok: false; error: PreparationError };

export function prepareImport(input: PreparationInput): PreparationResult {
  let options: ImportOptions;
  let data: unknown;
  let parsed: unknown;
  try {
    parsed = JSON.parse(
      input.kind === 'line' ? input.text : typeof input.body === 'string' ? input.body : decode(input.body),
    );
  } catch (err) {
    return { ok: false, error: { kind: 'json', message: (err as Error).message } };
  }
  if (input.kind === 'line') {
    options = input.options;
    data = parsed;
  } else {
    const checked = importSchema.safeParse(parsed);
    if (!checked.success) {
      return {
        ok: false,
        error: {
          kind: 'invalid',
          issues: checked.error.issues.map((i) => ({
            path: i.path.map(String).join('.'),
            message: i.message,
          })),
        },
      };
    }
    const { data: conversation, ...rest } = checked.data;
    options = rest;
    data = conversation;
  }
  let conversation: Conversation;
  try {
    conversation = convert(options.format, data, input.now);
  } catch (err) {
    if (err instanceof FormatError) {
      // The error's message leads with its field; the answer keeps them apart.
      const message = err.message.slice(`${err.field || 'data'}: `.length);
      return { ok: false, error: { kind: 'format', field: err.field, message } };
    }
    throw err;
  }
  const { nodes, path, nextId } = conversation.tree;
  // A canopy document's cursors are kept as written (it imports back to the same document); a conversion's are only
  // those that say something (Tree.essentialCursors), not one per message.
  const cursors =
    options.format === 'canopy'
      ? conversation.tree.cursors
      : essentialCursorsOf(nodes, conversation.tree.cursors);
  const size = Math.max(1, Math.trunc(input.batchNodes));
  const batches: string[] = [];
  for (let i = 0; i < nodes.length; i += size) batches.push(JSON.stringify(nodes.slice(i, i + size)));
  return {
    ok: true,
    prepared: {
      options,
      session: conversation.session,
      batches,
      nodes: nodes.length,
      usage: sumUsage(nodes.map((n) => n.usage)),
      path,
      cursors,
      nextId,
      summaries: conversation.summaries ?? [],
      files: conversation.files ?? [],
    },
  };
}

function convert(format: ImportFormat, data: unknown, now: number): Conversation {
  switch (format) {
    case 'canopy':
      return fromCanopyDocument(data, 'data');
    case 'openai':
      return fromOpenAi(data, now, 'data');
    case 'anthropic':
      return fromAnthropic(data, now, 'data');
    case 'chatgpt':
      return fromChatGpt(data, now, 'data');
  }
}

function decode(bytes: Uint8Array): string {
  return new TextDecoder('utf-8').decode(bytes);
}
