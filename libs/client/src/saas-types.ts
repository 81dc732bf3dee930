// Types of the SaaS routes: keys, audit log, webhooks, quotas and usage, provider keys.

import type { TenantInfo, WebhookEventType } from '@canopy/core';

export interface TenantPage {
  data: TenantInfo[];
  nextCursor: string | null;
}

export interface ApiKeyInfo {
  id: string;
  name: string | null;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  revoked: boolean;
}

export interface CreatedApiKey {
  id: string;
  /** The key itself: shown once. */
  apiKey: string;
  prefix: string;
  name: string | null;
  expiresAt: string | null;
}

export type AuditActor =
  { type: 'key'; keyId: string } | { type: 'user'; userId: string } | { type: 'admin' } | { type: 'system' };

export interface AuditEvent {
  id: string;
  tenantId: string;
  actor: AuditActor;
  action: string;
  targetType: string;
  targetId: string | null;
  requestId: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  createdAt: string;
}

export interface AuditQuery {
  /** Admin only. */
  tenantId?: string;
  /** Actions starting with this (`key.`, `webhook.create` ...). */
  action?: string;
  targetType?: string;
  targetId?: string;
  from?: string;
  to?: string;
  limit?: number;
  cursor?: string;
}

export interface Webhook {
  id: string;
  url: string;
  events: WebhookEventType[];
  enabled: boolean;
  description: string | null;
  disabledReason: string | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface WebhookInput {
  url: string;
  events: WebhookEventType[];
  enabled?: boolean;
  description?: string;
}

export interface WebhookAttempt {
  attempt: number;
  at: string;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

export interface WebhookDelivery {
  id: string;
  webhookId: string;
  eventType: WebhookEventType;
  payload: { type: WebhookEventType; timestamp: string; data: Record<string, unknown> };
  /** pending: waiting its turn, in flight or due again; failed: settled without success (lastError says why). */
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  attemptLog: WebhookAttempt[];
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  /** The last attempt's error, or for a disabled endpoint's delivery `not sent: the endpoint was …`. */
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

export interface QuotaInput {
  /** `storage`: bytes of stored files at any moment (its period only names when a reset is reported). */
  metric: 'tokens' | 'cost' | 'runs' | 'storage';
  period: 'day' | 'month';
  limit: number;
}

export interface QuotaState extends QuotaInput {
  usage: number;
  resetsAt: string;
}

export interface Quotas {
  tenant: QuotaState[];
  users: Array<{ userId: string; quotas: QuotaState[] }>;
}

export interface UsageQuery {
  from?: string;
  to?: string;
  groupBy?: 'day' | 'user' | 'model' | 'session';
  /** Admin only. */
  tenantId?: string;
}

export interface UsageReport {
  from: string;
  to: string;
  groupBy: 'day' | 'user' | 'model' | 'session';
  data: Array<{
    key: string | null;
    /** The tenant the row counts (every row names it, whoever asks). */
    tenantId: string;
    runs: number;
    inputTokens: number;
    outputTokens: number;
    totalTokens: number;
    totalCost: number;
  }>;
}

export type ProviderName = 'anthropic' | 'openai' | 'openai-compatible';

export interface ProviderKey {
  provider: ProviderName;
  baseUrl: string | null;
  models: string[];
  /** The key's last four characters. */
  keyHint: string;
  createdAt: string;
  updatedAt: string;
}
