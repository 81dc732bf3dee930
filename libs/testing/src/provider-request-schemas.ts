// The request bodies Canopy's `openai` and `anthropic` exports must be, as zod schemas written from the providers'
// API references: the OpenAI Chat Completions `{model, messages}` and the Anthropic Messages API `{model,
// max_tokens, system?, messages}`. Besides each field's shape they hold the rules the APIs answer with a 400: a
// tool message answers a call of the assistant message just before it and every call is answered; Anthropic's
// roles alternate, a user message's tool_result blocks come first and answer a tool_use of the message before,
// every tool_use but the last message's is answered, tool ids are unique and in the API's alphabet, text is never
// blank, the last assistant message does not end in whitespace. (The API now accepts an assistant message
// first, so that is not checked.) Strict objects: an export carries no field the API does not know.

import { z } from 'zod';

const jsonObjectText = (s: string): boolean => {
  try {
    const v: unknown = JSON.parse(s);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
};

// --- OpenAI Chat Completions ---

const openAiText = z.object({ type: z.literal('text'), text: z.string() }).strict();
const openAiRefusal = z.object({ type: z.literal('refusal'), refusal: z.string() }).strict();
const openAiImage = z
  .object({
    type: z.literal('image_url'),
    image_url: z
      .object({
        url: z.string().refine((u) => /^https?:\/\/./i.test(u) || /^data:image\/[^;,]+;base64,/.test(u), {
          message: 'an http(s) URL or an image data URL',
        }),
        detail: z.enum(['auto', 'low', 'high']).optional(),
      })
      .strict(),
  })
  .strict();
const openAiAudio = z
  .object({
    type: z.literal('input_audio'),
    input_audio: z.object({ data: z.string(), format: z.enum(['wav', 'mp3']) }).strict(),
  })
  .strict();
const openAiFile = z
  .object({
    type: z.literal('file'),
    file: z
      .object({
        file_data: z
          .string()
          .regex(/^data:[^;,]+;base64,/, 'a base64 data URL')
          .optional(),
        file_id: z.string().optional(),
        filename: z.string().optional(),
      })
      .strict()
      .refine((f) => f.file_data !== undefined || f.file_id !== undefined, {
        message: 'file_data or file_id',
      }),
  })
  .strict();

const openAiToolCall = z
  .object({
    id: z.string().min(1),
    type: z.literal('function'),
    function: z
      .object({
        name: z.string().min(1),
        arguments: z.string().refine(jsonObjectText, { message: 'the JSON text of an object' }),
      })
      .strict(),
  })
  .strict();

const textContent = z.union([z.string(), z.array(openAiText).min(1)]);

export const openAiMessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('developer'), content: textContent, name: z.string().optional() }).strict(),
  z.object({ role: z.literal('system'), content: textContent, name: z.string().optional() }).strict(),
  z
    .object({
      role: z.literal('user'),
      content: z.union([
        z.string(),
        z.array(z.discriminatedUnion('type', [openAiText, openAiImage, openAiAudio, openAiFile])).min(1),
      ]),
      name: z.string().optional(),
    })
    .strict(),
  z
    .object({
      role: z.literal('assistant'),
      content: z
        .union([z.string(), z.array(z.discriminatedUnion('type', [openAiText, openAiRefusal])).min(1)])
        .nullable()
        .optional(),
      refusal: z.string().nullable().optional(),
      name: z.string().optional(),
      tool_calls: z.array(openAiToolCall).min(1).optional(),
    })
    .strict()
    .refine((m) => (m.content !== null && m.content !== undefined) || m.tool_calls !== undefined, {
      message: 'content is required unless tool_calls are given',
    }),
  z.object({ role: z.literal('tool'), content: textContent, tool_call_id: z.string().min(1) }).strict(),
]);

export const openAiChatRequestSchema = z
  .object({ model: z.string().min(1), messages: z.array(openAiMessageSchema).min(1) })
  .strict()
  .superRefine((request, ctx) => {
    // Tool messages answer the calls of the assistant message just before them (only tool messages between);
    // each call is answered, once, before any other message.
    let open: Map<string, boolean> | null = null;
    let openAt = -1;
    const closeOpen = (at: number) => {
      for (const [id, answered] of open ?? []) {
        if (!answered)
          ctx.addIssue({
            code: 'custom',
            path: ['messages', openAt],
            message: `tool call ${id} is not answered by the tool messages after it (next message: ${at})`,
          });
      }
      open = null;
    };
    request.messages.forEach((m, i) => {
      if (m.role === 'tool') {
        const calls = open;
        if (!calls || !calls.has(m.tool_call_id)) {
          ctx.addIssue({
            code: 'custom',
            path: ['messages', i, 'tool_call_id'],
            message: 'a tool message must answer a tool call of the assistant message before it',
          });
        } else if (calls.get(m.tool_call_id)) {
          ctx.addIssue({ code: 'custom', path: ['messages', i], message: 'tool call answered twice' });
        } else calls.set(m.tool_call_id, true);
        return;
      }
      closeOpen(i);
      if (m.role === 'assistant' && m.tool_calls) {
        const calls = new Map<string, boolean>();
        for (const c of m.tool_calls) {
          if (calls.has(c.id))
            ctx.addIssue({
              code: 'custom',
              path: ['messages', i],
              message: `duplicate tool call id ${c.id}`,
            });
          calls.set(c.id, false);
        }
        open = calls;
        openAt = i;
      }
    });
    closeOpen(request.messages.length);
  });

// --- Anthropic Messages ---

const TOOL_ID = /^[a-zA-Z0-9_-]+$/;
const nonBlank = z
  .string()
  .min(1, 'text content blocks must be non-empty')
  .refine((s) => s.trim() !== '', { message: 'text content blocks must contain non-whitespace text' });

const anthropicText = z.object({ type: z.literal('text'), text: nonBlank }).strict();
const anthropicImage = z
  .object({
    type: z.literal('image'),
    source: z.discriminatedUnion('type', [
      z
        .object({
          type: z.literal('base64'),
          media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']),
          data: z.string(),
        })
        .strict(),
      z.object({ type: z.literal('url'), url: z.string().regex(/^https?:\/\/./i) }).strict(),
    ]),
  })
  .strict();
const anthropicDocument = z
  .object({
    type: z.literal('document'),
    source: z.discriminatedUnion('type', [
      z
        .object({ type: z.literal('base64'), media_type: z.literal('application/pdf'), data: z.string() })
        .strict(),
      z.object({ type: z.literal('text'), media_type: z.literal('text/plain'), data: z.string() }).strict(),
      z.object({ type: z.literal('url'), url: z.string().regex(/^https?:\/\/./i) }).strict(),
    ]),
    title: z.string().nullable().optional(),
    context: z.string().nullable().optional(),
  })
  .strict();
const anthropicThinking = z
  .object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string().min(1) })
  .strict();
const anthropicToolUse = z
  .object({
    type: z.literal('tool_use'),
    id: z.string().regex(TOOL_ID),
    name: z.string().min(1).max(200),
    input: z.record(z.string(), z.unknown()),
  })
  .strict();
const anthropicToolResult = z
  .object({
    type: z.literal('tool_result'),
    tool_use_id: z.string().regex(TOOL_ID),
    content: z
      .union([
        z.string(),
        z.array(z.discriminatedUnion('type', [anthropicText, anthropicImage, anthropicDocument])),
      ])
      .optional(),
    is_error: z.boolean().optional(),
  })
  .strict();

const userBlock = z.discriminatedUnion('type', [
  anthropicText,
  anthropicImage,
  anthropicDocument,
  anthropicToolResult,
]);
const assistantBlock = z.discriminatedUnion('type', [anthropicText, anthropicThinking, anthropicToolUse]);

export const anthropicMessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('user'), content: z.union([nonBlank, z.array(userBlock).min(1)]) }).strict(),
  z
    .object({ role: z.literal('assistant'), content: z.union([nonBlank, z.array(assistantBlock).min(1)]) })
    .strict(),
]);

type AnthropicMessage = z.infer<typeof anthropicMessageSchema>;
type Blocks = Array<{ type: string; id?: string; tool_use_id?: string; text?: string }>;

const blocksOf = (m: AnthropicMessage): Blocks =>
  typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;

export const anthropicMessagesRequestSchema = z
  .object({
    model: z.string().min(1).max(256),
    max_tokens: z.number().int().min(1),
    system: z.union([nonBlank, z.array(anthropicText).min(1)]).optional(),
    messages: z.array(anthropicMessageSchema).min(1).max(100_000),
  })
  .strict()
  .superRefine((request, ctx) => {
    const issue = (path: Array<string | number>, message: string) =>
      ctx.addIssue({ code: 'custom', path: ['messages', ...path], message });
    const seen = new Set<string>();
    let calls = new Set<string>();
    request.messages.forEach((m, i) => {
      const blocks = blocksOf(m);
      if (i > 0 && request.messages[i - 1]!.role === m.role)
        issue([i, 'role'], `roles must alternate, but found two "${m.role}" messages in a row`);
      if (m.role === 'assistant') {
        calls = new Set();
        blocks.forEach((b, j) => {
          if (b.type !== 'tool_use') return;
          if (seen.has(b.id!)) issue([i, 'content', j, 'id'], 'tool_use ids must be unique');
          seen.add(b.id!);
          calls.add(b.id!);
        });
        return;
      }
      const answered = new Set<string>();
      let pastResults = false;
      blocks.forEach((b, j) => {
        if (b.type !== 'tool_result') {
          pastResults = true;
          return;
        }
        if (pastResults) issue([i, 'content', j], 'tool_result blocks must come first in a user message');
        if (!calls.has(b.tool_use_id!) || answered.has(b.tool_use_id!))
          issue(
            [i, 'content', j, 'tool_use_id'],
            'a tool_result must answer, once, a tool_use of the assistant message before it',
          );
        answered.add(b.tool_use_id!);
      });
      for (const id of calls) {
        if (!answered.has(id)) issue([i], `tool_use ${id} has no tool_result in the message after it`);
      }
      calls = new Set();
    });
    const last = request.messages.at(-1);
    if (last?.role === 'assistant') {
      const tail = blocksOf(last).at(-1);
      if (tail?.type === 'text' && /\s$/.test(tail.text!))
        issue([request.messages.length - 1], 'final assistant content cannot end with trailing whitespace');
    }
  });
