// Messages and usage as a document may carry them (canopy exports): every block type of libs/core's Message,
// bounded like the API's requests, so an imported message is one the engine could have written.

import { z } from 'zod';
import { attachmentBlockSchema, boundedJson, LIMITS, textBlockSchema } from '../api/schemas';
import { USAGE_FIELDS } from '../usage';

const thinkingBlockSchema = z
  .object({
    type: z.literal('thinking'),
    text: z.string().max(LIMITS.text),
    signature: z.string().max(100_000).optional(),
  })
  .strict();

const toolUseBlockSchema = z
  .object({
    type: z.literal('tool_use'),
    id: z.string().min(1).max(256),
    name: z.string().min(1).max(200),
    input: boundedJson(),
  })
  .strict();

const toolResultBlockSchema = z
  .object({
    type: z.literal('tool_result'),
    toolUseId: z.string().min(1).max(256),
    content: z.union([
      z.string().max(LIMITS.text),
      z.array(z.discriminatedUnion('type', [textBlockSchema, attachmentBlockSchema])).max(LIMITS.blocks),
    ]),
    isError: z.boolean(),
  })
  .strict();

export const blockSchema = z.discriminatedUnion('type', [
  textBlockSchema,
  thinkingBlockSchema,
  toolUseBlockSchema,
  toolResultBlockSchema,
  attachmentBlockSchema,
]);

export const messageSchema = z
  .object({
    role: z.enum(['user', 'assistant']),
    content: z.array(blockSchema).max(LIMITS.blocks * 10),
    timestamp: z.number().finite().min(0).max(8.64e15),
    interrupted: z.literal(true).optional(),
  })
  .strict();

/** A usage: any of the ten fields, each a finite number; missing ones count 0 (totals: the sum of their parts). */
export const usageSchema = z
  .object(
    Object.fromEntries(USAGE_FIELDS.map((f) => [f, z.number().finite().optional()])) as Record<
      (typeof USAGE_FIELDS)[number],
      z.ZodOptional<z.ZodNumber>
    >,
  )
  .strict();
