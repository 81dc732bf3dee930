// Request bodies of the frontend protocols. Both are open (fields a newer client adds are accepted and ignored);
// what Canopy reads is bounded. The AI SDK's request: what DefaultChatTransport sends (`{id, messages, trigger,
// messageId}` and useChat's `body`: `model`, `system`, `opts`, `tools` for a session created on first use). AG-UI's
// RunAgentInput is checked again, whole, by the protocol's own schema (@ag-ui/core) before it is used.

import { z } from 'zod';
import { createZodDto } from 'nestjs-zod';
import { boundedJson, clientToolSchema, jsonDepth, LIMITS, modelSchema, sessionIdSchema } from '@canopy/core';

/** Messages a request may carry: the client's copy of the conversation (only the last ones are read). */
const MAX_MESSAGES = 10_000;

/** A JSON object (a session's opts) with the API's nesting bound, the object itself counted. */
const jsonRecord = z.record(z.string().max(200), z.unknown()).superRefine((value, ctx) => {
  if (jsonDepth(value, LIMITS.jsonDepth + 1) > LIMITS.jsonDepth) {
    ctx.addIssue({ code: 'custom', message: `nested deeper than ${LIMITS.jsonDepth} levels` });
  }
});

const uiMessagePartSchema = z.looseObject({ type: z.string().min(1).max(200) });

export const uiMessageSchema = z.looseObject({
  id: z.string().max(200),
  role: z.enum(['system', 'user', 'assistant']),
  parts: z.array(uiMessagePartSchema).max(LIMITS.blocks * 10),
  metadata: boundedJson().optional(),
});

export const uiChatRequestSchema = z.looseObject({
  /** The chat's id: the session (created on first use). */
  id: sessionIdSchema,
  messages: z.array(uiMessageSchema).max(MAX_MESSAGES),
  trigger: z.enum(['submit-message', 'regenerate-message']),
  /** The message regenerated (regenerate-message) or edited (submit-message). */
  messageId: z.string().max(200).optional(),
  /** A session created by this request: its model (default: DEFAULT_MODEL), system prompt, opts, client tools. */
  model: modelSchema.optional(),
  system: z.string().max(LIMITS.system).optional(),
  opts: jsonRecord.optional(),
  tools: z.array(clientToolSchema).max(LIMITS.tools).optional(),
});

export type UiChatRequest = z.infer<typeof uiChatRequestSchema>;
export type UiMessageInput = z.infer<typeof uiMessageSchema>;

export class UiChatRequestDto extends createZodDto(uiChatRequestSchema) {}

/** The envelope of RunAgentInput the route documents and bounds; messages are checked by RunAgentInputSchema. */
export const agUiRunInputSchema = z.looseObject({
  /** The thread: the session (created on first use). */
  threadId: sessionIdSchema,
  runId: z.string().min(1).max(200),
  parentRunId: z.string().max(200).optional(),
  protocolVersion: z.string().max(50).optional(),
  messages: z.array(z.looseObject({ id: z.string().max(200), role: z.string().max(50) })).max(MAX_MESSAGES),
  tools: z
    .array(z.looseObject({ name: z.string().max(64), description: z.string().max(4_000) }))
    .max(LIMITS.tools)
    .optional(),
  context: z.array(z.looseObject({})).max(1_000).optional(),
  /** `model`, `system`, `opts` of a session created by this request. */
  forwardedProps: boundedJson().optional(),
  state: boundedJson().optional(),
  resume: z
    .array(z.looseObject({ interruptId: z.string().max(200), status: z.enum(['resolved', 'cancelled']) }))
    .max(LIMITS.tools)
    .optional(),
});

export class AgUiRunInputDto extends createZodDto(agUiRunInputSchema) {}
