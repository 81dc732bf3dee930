// Request schemas of the SaaS routes: audit log, webhooks, usage, quotas and per-tenant provider keys.
// Shared by the api (validation, OpenAPI) and the SDK (types).

import { z } from 'zod';

const isoDate = z.iso.datetime({ offset: true });

export const auditQuerySchema = z
  .object({
    /** Admin only: one tenant's events. */
    tenantId: z.uuid().optional(),
    /** Actions starting with this (e.g. `key.` or `webhook.create`). */
    action: z.string().trim().min(1).max(100).optional(),
    targetType: z.string().trim().min(1).max(50).optional(),
    targetId: z.string().min(1).max(200).optional(),
    from: isoDate.optional(),
    to: isoDate.optional(),
    limit: z.coerce.number().int().min(1).max(500).default(100),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();

export const WEBHOOK_EVENT_TYPES = [
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.paused',
  'session.created',
  'session.deleted',
  'session.title',
  'session.shared',
  'feedback.created',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** An http(s) URL without credentials in it. */
const webhookUrl = z
  .url({ protocol: /^https?$/ })
  .max(2_000)
  .refine((v) => !/^https?:\/\/[^/?#]*@/i.test(v), { message: 'an http(s) URL without credentials' });

export const createWebhookSchema = z
  .object({
    url: webhookUrl,
    events: z.array(z.enum(WEBHOOK_EVENT_TYPES)).min(1).max(WEBHOOK_EVENT_TYPES.length),
    enabled: z.boolean().default(true),
    description: z.string().max(500).optional(),
  })
  .strict();

export const updateWebhookSchema = z
  .object({
    url: webhookUrl.optional(),
    events: z.array(z.enum(WEBHOOK_EVENT_TYPES)).min(1).max(WEBHOOK_EVENT_TYPES.length).optional(),
    enabled: z.boolean().optional(),
    description: z.string().max(500).nullable().optional(),
  })
  .strict()
  .refine((v) => Object.keys(v).length > 0, {
    message: 'give at least one of url, events, enabled, description',
  });

export const listDeliveriesQuerySchema = z
  .object({
    status: z.enum(['pending', 'delivered', 'failed']).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(50),
  })
  .strict();

export const usageQuerySchema = z
  .object({
    from: isoDate.optional(),
    to: isoDate.optional(),
    groupBy: z.enum(['day', 'user', 'model', 'session']).default('day'),
    /** Admin only: one tenant (default every tenant). */
    tenantId: z.uuid().optional(),
  })
  .strict();

export const quotaSchema = z
  .object({
    /** `storage`: bytes of stored files at any moment (uploads past it are refused); the others per period. */
    metric: z.enum(['tokens', 'cost', 'runs', 'storage']),
    period: z.enum(['day', 'month']),
    limit: z.number().min(0).max(1e15),
  })
  .strict();

/** PUT a set of quotas (replaces the set for that scope; [] removes them). */
export const putQuotasSchema = z
  .object({ quotas: z.array(quotaSchema).max(6) })
  .strict()
  .refine((v) => new Set(v.quotas.map((q) => `${q.metric}/${q.period}`)).size === v.quotas.length, {
    message: 'one quota per metric and period',
  });

export const PROVIDERS = ['anthropic', 'openai', 'openai-compatible'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export const putProviderSchema = z
  .object({
    apiKey: z.string().min(8).max(1_000),
    /** openai-compatible: the server's base URL (required there). */
    baseUrl: z
      .url({ protocol: /^https?$/ })
      .max(2_000)
      .optional(),
    /** The model names the tenant's key may use (listed by GET /v1/models). */
    models: z.array(z.string().trim().min(1).max(200)).max(50).default([]),
  })
  .strict();

export type AuditQuery = z.infer<typeof auditQuerySchema>;
export type CreateWebhookRequest = z.input<typeof createWebhookSchema>;
export type UpdateWebhookRequest = z.infer<typeof updateWebhookSchema>;
export type UsageQuery = z.input<typeof usageQuerySchema>;
export type QuotaRequest = z.infer<typeof quotaSchema>;
export type PutProviderRequest = z.input<typeof putProviderSchema>;
