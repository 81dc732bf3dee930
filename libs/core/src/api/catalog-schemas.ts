// Request shapes of finding, forking, moving and expiring sessions: the list filters (query and JSON forms),
// search and count, fork, export and import, bulk delete and cancel, a tenant's retention policy.

import { z } from 'zod';
import { boundedJson, metadataSchema, modelSchema, sessionIdSchema } from './schemas';

const STATUSES = ['idle', 'busy', 'paused'] as const;

const isoDateTime = z.iso.datetime({ offset: true });

/** The list filters as query parameters (metadata.<key>=<value> and metadataAny.<key>=<value> come beside them). */
export const sessionFilterQueryShape = {
  userId: z.string().min(1).max(200).optional(),
  live: z.enum(['true', 'false']).optional(),
  model: modelSchema.optional(),
  /** One status, or several separated by commas (`busy,paused`). */
  status: z
    .string()
    .max(40)
    .regex(/^(idle|busy|paused)(,(idle|busy|paused)){0,2}$/, 'idle, busy or paused, comma-separated')
    .optional(),
  pinned: z.enum(['true', 'false']).optional(),
  createdAfter: isoDateTime.optional(),
  createdBefore: isoDateTime.optional(),
  updatedAfter: isoDateTime.optional(),
  updatedBefore: isoDateTime.optional(),
};

const pageShape = {
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(500).optional(),
};

/** The words of a search: websearch_to_tsquery syntax (words, "quoted phrases", or, -word). */
export const searchTextSchema = z.string().trim().min(1).max(500);

/** GET /v1/sessions: a page of sessions, newest updatedAt first, with the list filters. */
export const listSessionsQuerySchema = z.object({ ...pageShape, ...sessionFilterQueryShape });
export const searchQuerySchema = z.object({ q: searchTextSchema, ...pageShape, ...sessionFilterQueryShape });
export const countQuerySchema = z.object({ q: searchTextSchema.optional(), ...sessionFilterQueryShape });
export const bulkExportQuerySchema = z.object({
  cursor: z.string().max(500).optional(),
  ...sessionFilterQueryShape,
});

/** The list filters as JSON (bulk operations). */
export const sessionFilterSchema = z
  .object({
    userId: z.string().min(1).max(200).optional(),
    live: z.boolean().optional(),
    model: modelSchema.optional(),
    status: z.array(z.enum(STATUSES)).min(1).max(3).optional(),
    pinned: z.boolean().optional(),
    metadata: z.record(z.string().min(1).max(100), z.string().max(1_000)).optional(),
    metadataAny: z
      .record(z.string().min(1).max(100), z.array(z.string().max(1_000)).min(1).max(50))
      .optional(),
    createdAfter: isoDateTime.optional(),
    createdBefore: isoDateTime.optional(),
    updatedAfter: isoDateTime.optional(),
    updatedBefore: isoDateTime.optional(),
    /** Words the sessions' messages must match (search syntax). */
    q: searchTextSchema.optional(),
  })
  .strict()
  .refine((f) => Object.keys(f.metadata ?? {}).length + Object.keys(f.metadataAny ?? {}).length <= 16, {
    message: 'at most 16 metadata filters',
  });

/** Sessions one bulk call acts on at most. */
export const BULK_MAX = 500;

/** Whether a filter narrows anything (an absent filter, `{}` or `{metadata: {}}` matches every session). */
function narrows(filter: Record<string, unknown> | undefined): boolean {
  return Object.values(filter ?? {}).some(
    (v) => v !== undefined && !(typeof v === 'object' && v !== null && Object.keys(v).length === 0),
  );
}

export const bulkTargetSchema = z
  .object({
    ids: z.array(sessionIdSchema).min(1).max(BULK_MAX).optional(),
    filter: sessionFilterSchema.optional(),
    /** Every session in reach (the tenant's, a user token's own): required when the filter narrows nothing. */
    all: z.literal(true).optional(),
    /** With a filter: act on at most this many (default and cap 500); `more` says whether others matched. */
    limit: z.number().int().min(1).max(BULK_MAX).optional(),
  })
  .strict()
  .refine((b) => b.ids === undefined || (b.filter === undefined && b.all === undefined), {
    message: 'give either ids or a filter (or all: true)',
    path: ['ids'],
  })
  .refine((b) => b.ids !== undefined || b.all === true || narrows(b.filter), {
    message: 'a filter that narrows nothing matches every session: send all: true to mean every session',
    path: ['all'],
  });

export const forkSchema = z
  .object({
    /** The last node of the fork (default: the active path's tip). */
    nodeId: z.number().int().min(1).nullable().optional(),
    title: z.string().max(500).nullable().optional(),
    metadata: metadataSchema.optional(),
    userId: z.string().min(1).max(200).optional(),
  })
  .strict();

export const EXPORT_FORMATS = ['canopy', 'openai', 'anthropic', 'markdown'] as const;
export const IMPORT_FORMATS = ['canopy', 'openai', 'anthropic', 'chatgpt'] as const;

export const exportQuerySchema = z.object({ format: z.enum(EXPORT_FORMATS).default('canopy') }).strict();

export const importSchema = z
  .object({
    format: z.enum(IMPORT_FORMATS),
    /** The conversation: a canopy document, an OpenAI / Anthropic message array (or request body), a ChatGPT conversation. */
    data: boundedJson().refine((v) => v !== undefined, { message: 'required' }),
    userId: z.string().min(1).max(200).optional(),
    /** Merged over the conversation's own metadata. */
    metadata: metadataSchema.optional(),
    /** Default: the conversation's model, else mock:echo. */
    model: modelSchema.optional(),
  })
  .strict();

export const bulkImportQuerySchema = z
  .object({
    format: z.enum(IMPORT_FORMATS).default('canopy'),
    userId: z.string().min(1).max(200).optional(),
    model: modelSchema.optional(),
  })
  .strict();

export const retentionSchema = z
  .object({
    /** Delete sessions not updated for this many days; null: keep them forever. */
    deleteAfterDays: z.number().int().min(1).max(36_500).nullable(),
    /** `pinned` (default): pinned sessions are kept; `none`: nothing is. */
    keep: z.enum(['none', 'pinned']).default('pinned'),
  })
  .strict();

/** PATCH /v1/admin/tenants/:id: any of rename, disable / enable, retention policy (at least one). */
export const updateTenantSchema = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    disabled: z.boolean().optional(),
    retention: retentionSchema.optional(),
  })
  .strict()
  .refine((v) => v.name !== undefined || v.disabled !== undefined || v.retention !== undefined, {
    message: 'give at least one of name, disabled, retention',
  });

export type SessionFilterRequest = z.infer<typeof sessionFilterSchema>;
export type BulkTargetRequest = z.infer<typeof bulkTargetSchema>;
export type ForkRequestBody = z.infer<typeof forkSchema>;
export type ImportRequestBody = z.infer<typeof importSchema>;
export type RetentionRequest = z.infer<typeof retentionSchema>;
