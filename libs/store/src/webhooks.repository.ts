// Webhook endpoints and their deliveries. Endpoints are a tenant's (CRUD under its row-level security, each change
// audited in its transaction); deliveries are written by the outbox triggers (migration 20261206020000) and taken
// by senders: `claimDue` leases due rows across tenants (FOR UPDATE SKIP LOCKED, so senders never take the same
// row at once), `recordAttempt` settles one. A lease that expires (its sender died) makes the row due again.

import { Injectable } from '@nestjs/common';
import type { Scope } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import { writeAudit } from './audit';
import { Database, isUuid, type SqlTx } from './database';
import { query, raw, sql } from './sql';

export interface WebhookView {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  description: string | null;
  disabledReason: string | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface AttemptRecord {
  attempt: number;
  at: string;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

export interface DeliveryView {
  id: string;
  webhookId: string;
  eventType: string;
  payload: Record<string, unknown>;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  attemptLog: AttemptRecord[];
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

/** A delivery a sender holds, with what it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  tenantId: string;
  webhookId: string;
  url: string;
  secret: string;
  enabled: boolean;
  payload: Record<string, unknown>;
  attempts: number;
  createdAt: Date;
}

interface WebhookRow {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  description: string | null;
  disabled_reason: string | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

interface DeliveryRow {
  id: string;
  webhook_id: string;
  event_type: string;
  payload: Record<string, unknown>;
  status: DeliveryView['status'];
  attempts: number;
  attempt_log: AttemptRecord[];
  next_attempt_at: Date;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  delivered_at: Date | null;
}

const WEBHOOK_COLUMNS = `id::text AS id, url, events, enabled, description, disabled_reason, failing_since,
  created_at, updated_at`;
const DELIVERY_COLUMNS = `id::text AS id, webhook_id::text AS webhook_id, event_type, payload, status, attempts,
  attempt_log, next_attempt_at, last_status_code, last_error, created_at, delivered_at`;
/** Attempts kept per delivery in its log. */
const ATTEMPT_LOG_MAX = 20;

@Injectable()
export class WebhooksRepository {
  constructor(private readonly db: Database) {}

  async create(
    scope: Pick<Scope, 'tenantId'>,
    input: { url: string; events: string[]; enabled: boolean; description: string | null; secret: string },
  ): Promise<WebhookView> {
    return this.db.withTenantSql(scope, async (tx) => {
      const [row] = await tx.query<WebhookRow>(
        `INSERT INTO webhooks (tenant_id, url, events, enabled, description, secret)
         VALUES ($1::uuid, $2, $3::text[], $4, $5, $6) RETURNING ${WEBHOOK_COLUMNS}`,
        [scope.tenantId, input.url, input.events, input.enabled, input.description, input.secret],
      );
      const view = toWebhook(row!);
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'webhook.create',
        targetType: 'webhook',
        targetId: view.id,
        after: { url: view.url, events: view.events, enabled: view.enabled },
      });
      return view;
    });
  }

  async list(scope: Pick<Scope, 'tenantId'>): Promise<WebhookView[]> {
    const rows = await this.db.withTenantSql(scope, (tx) =>
      tx.query<WebhookRow>(
        `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE tenant_id = $1::uuid ORDER BY created_at DESC, id DESC`,
        [scope.tenantId],
      ),
    );
    return rows.map(toWebhook);
  }

  async get(scope: Pick<Scope, 'tenantId'>, id: string): Promise<WebhookView> {
    if (!isUuid(id)) throw CanopyException.notFound('webhook');
    const [row] = await this.db.withTenantSql(scope, (tx) => this.row(tx, scope.tenantId, id));
    if (!row) throw CanopyException.notFound('webhook');
    return toWebhook(row);
  }

  async update(
    scope: Pick<Scope, 'tenantId'>,
    id: string,
    input: { url?: string; events?: string[]; enabled?: boolean; description?: string | null },
  ): Promise<WebhookView> {
    if (!isUuid(id)) throw CanopyException.notFound('webhook');
    return this.db.withTenantSql(scope, async (tx) => {
      const [before] = await this.row(tx, scope.tenantId, id, true);
      if (!before) throw CanopyException.notFound('webhook');
      // Enabling again clears why it was disabled and its failure streak.
      const reenabled = input.enabled === true && !before.enabled;
      const [row] = await tx.query<WebhookRow>(
        `UPDATE webhooks SET url = coalesce($3, url), events = coalesce($4::text[], events),
                enabled = coalesce($5, enabled),
                description = CASE WHEN $6 THEN $7 ELSE description END,
                disabled_reason = CASE WHEN $8 THEN NULL ELSE disabled_reason END,
                failing_since = CASE WHEN $8 THEN NULL ELSE failing_since END,
                updated_at = now()
          WHERE tenant_id = $1::uuid AND id = $2::uuid RETURNING ${WEBHOOK_COLUMNS}`,
        [
          scope.tenantId,
          id,
          input.url ?? null,
          input.events ?? null,
          input.enabled ?? null,
          input.description !== undefined,
          input.description ?? null,
          reenabled,
        ],
      );
      const after = toWebhook(row!);
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'webhook.update',
        targetType: 'webhook',
        targetId: id,
        before: { url: before.url, events: before.events, enabled: before.enabled },
        after: { url: after.url, events: after.events, enabled: after.enabled },
      });
      return after;
    });
  }

  async delete(scope: Pick<Scope, 'tenantId'>, id: string): Promise<void> {
    if (!isUuid(id)) throw CanopyException.notFound('webhook');
    await this.db.withTenantSql(scope, async (tx) => {
      const [row] = await tx.query<WebhookRow>(
        `DELETE FROM webhooks WHERE tenant_id = $1::uuid AND id = $2::uuid RETURNING ${WEBHOOK_COLUMNS}`,
        [scope.tenantId, id],
      );
      if (!row) throw CanopyException.notFound('webhook');
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'webhook.delete',
        targetType: 'webhook',
        targetId: id,
        before: { url: row.url, events: row.events },
      });
    });
  }

  /** An endpoint's deliveries, newest first. */
  async deliveries(
    scope: Pick<Scope, 'tenantId'>,
    webhookId: string,
    filter: { status?: DeliveryView['status']; limit: number },
  ): Promise<DeliveryView[]> {
    if (!isUuid(webhookId)) throw CanopyException.notFound('webhook');
    return this.db.withTenantSql(scope, async (tx) => {
      const [hook] = await this.row(tx, scope.tenantId, webhookId);
      if (!hook) throw CanopyException.notFound('webhook');
      const rows = await tx.query<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
          WHERE tenant_id = $1::uuid AND webhook_id = $2::uuid AND ($3::text IS NULL OR status = $3)
          ORDER BY created_at DESC, id DESC LIMIT $4`,
        [scope.tenantId, webhookId, filter.status ?? null, filter.limit],
      );
      return rows.map(toDelivery);
    });
  }

  /** Makes a delivery due now again (its attempts so far stay in its log); not_found for another's. */
  async retry(scope: Pick<Scope, 'tenantId'>, webhookId: string, deliveryId: string): Promise<DeliveryView> {
    if (!isUuid(webhookId) || !isUuid(deliveryId)) throw CanopyException.notFound('delivery');
    return this.db.withTenantSql(scope, async (tx) => {
      const [row] = await tx.query<DeliveryRow>(
        `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), locked_until = NULL
          WHERE tenant_id = $1::uuid AND webhook_id = $2::uuid AND id = $3::uuid RETURNING ${DELIVERY_COLUMNS}`,
        [scope.tenantId, webhookId, deliveryId],
      );
      if (!row) throw CanopyException.notFound('delivery');
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'webhook.delivery.retry',
        targetType: 'webhook_delivery',
        targetId: deliveryId,
      });
      return toDelivery(row);
    });
  }

  /**
   * Leases up to `limit` due deliveries of any tenant for `leaseMs` (the attempt counts from here: a sender that
   * dies mid-attempt has used it). A row is due when pending, its time has come, and no live lease holds it.
   */
  async claimDue(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    return this.db.withAdminSql('webhook senders: lease due deliveries of every tenant', async (tx) => {
      const rows = await tx.query<{
        id: string;
        tenant_id: string;
        webhook_id: string;
        url: string;
        secret: string;
        enabled: boolean;
        payload: Record<string, unknown>;
        attempts: number;
        created_at: Date;
      }>(
        `WITH due AS (
           SELECT id FROM webhook_deliveries
            WHERE status = 'pending' AND next_attempt_at <= now()
              AND (locked_until IS NULL OR locked_until < now())
            ORDER BY next_attempt_at
            LIMIT $1
            FOR UPDATE SKIP LOCKED)
         UPDATE webhook_deliveries d
            SET locked_until = now() + make_interval(secs => $2::float8 / 1000), attempts = d.attempts + 1
           FROM due, webhooks w
          WHERE d.id = due.id AND w.id = d.webhook_id
         RETURNING d.id::text AS id, d.tenant_id::text AS tenant_id, d.webhook_id::text AS webhook_id, w.url,
                   w.secret, w.enabled, d.payload, d.attempts, d.created_at`,
        [limit, leaseMs],
      );
      return rows.map((r) => ({
        id: r.id,
        tenantId: r.tenant_id,
        webhookId: r.webhook_id,
        url: r.url,
        secret: r.secret,
        enabled: r.enabled,
        payload: r.payload,
        attempts: r.attempts,
        createdAt: r.created_at,
      }));
    });
  }

  /**
   * Settles an attempt: delivered; or due again at `retryAt`; or failed for good (retryAt null). A failure also
   * starts (or continues) the endpoint's failure streak, and disables it once the streak is older than
   * `disableAfterMs`; a success ends the streak.
   */
  async recordAttempt(
    delivery: ClaimedDelivery,
    attempt: AttemptRecord,
    outcome:
      | { delivered: true }
      | {
          delivered: false;
          retryAt: Date | null;
          disableAfterMs: number;
          /** When the attempt was judged (epoch ms): the streak's age is measured at the same moment. */
          at: number;
        },
  ): Promise<{ disabled: boolean }> {
    return this.db.withTenantSql({ tenantId: delivery.tenantId }, async (tx) => {
      const entry = JSON.stringify([attempt]);
      if (outcome.delivered) {
        await tx.query(
          `UPDATE webhook_deliveries
              SET status = 'delivered', delivered_at = now(), locked_until = NULL, last_status_code = $2,
                  last_error = NULL, attempt_log = (attempt_log || $3::jsonb) #- '{${-ATTEMPT_LOG_MAX - 1}}'
            WHERE id = $1::uuid`,
          [delivery.id, attempt.statusCode, entry],
        );
        await tx.query(
          `UPDATE webhooks SET failing_since = NULL WHERE id = $1::uuid AND failing_since IS NOT NULL`,
          [delivery.webhookId],
        );
        return { disabled: false };
      }
      await tx.query(
        `UPDATE webhook_deliveries
            SET status = CASE WHEN $2::timestamptz IS NULL THEN 'failed' ELSE 'pending' END,
                next_attempt_at = coalesce($2::timestamptz, next_attempt_at), locked_until = NULL,
                last_status_code = $3, last_error = $4,
                attempt_log = (attempt_log || $5::jsonb) #- '{${-ATTEMPT_LOG_MAX - 1}}'
          WHERE id = $1::uuid`,
        [delivery.id, outcome.retryAt, attempt.statusCode, attempt.error, entry],
      );
      const [hook] = await tx.query<{ enabled: boolean; failing_since: Date; url: string }>(
        // The streak starts with the first event the endpoint could not take (when it was created).
        `UPDATE webhooks SET failing_since = coalesce(failing_since, $2::timestamptz)
          WHERE id = $1::uuid RETURNING enabled, failing_since, url`,
        [delivery.webhookId, delivery.createdAt],
      );
      if (!hook?.enabled || outcome.at - hook.failing_since.getTime() < outcome.disableAfterMs)
        return { disabled: false };
      const reason = `disabled after failing since ${hook.failing_since.toISOString()} (last: ${attempt.error ?? `HTTP ${attempt.statusCode}`})`;
      await tx.query(
        `UPDATE webhooks SET enabled = false, disabled_reason = $2, updated_at = now() WHERE id = $1::uuid`,
        [delivery.webhookId, reason],
      );
      await writeAudit(
        tx,
        {
          tenantId: delivery.tenantId,
          action: 'webhook.disable',
          targetType: 'webhook',
          targetId: delivery.webhookId,
          before: { enabled: true },
          after: { enabled: false, reason },
        },
        { actor: { type: 'system' }, requestId: null },
      );
      return { disabled: true };
    });
  }

  /** A leased delivery of a disabled or deleted endpoint stays pending for later (re-enabling sends it). */
  async release(delivery: ClaimedDelivery, delayMs: number): Promise<void> {
    await this.db.withTenantSql({ tenantId: delivery.tenantId }, (tx) =>
      tx.query(
        `UPDATE webhook_deliveries SET locked_until = NULL, attempts = greatest(attempts - 1, 0),
                next_attempt_at = now() + make_interval(secs => $2::float8 / 1000)
          WHERE id = $1::uuid`,
        [delivery.id, delayMs],
      ),
    );
  }

  private row(tx: SqlTx, tenantId: string, id: string, lock = false) {
    return query<WebhookRow>(
      tx,
      lock
        ? sql`SELECT ${raw(WEBHOOK_COLUMNS)} FROM webhooks WHERE tenant_id = ${tenantId}::uuid AND id = ${id}::uuid FOR UPDATE`
        : sql`SELECT ${raw(WEBHOOK_COLUMNS)} FROM webhooks WHERE tenant_id = ${tenantId}::uuid AND id = ${id}::uuid`,
    );
  }
}

function toWebhook(r: WebhookRow): WebhookView {
  return {
    id: r.id,
    url: r.url,
    events: r.events,
    enabled: r.enabled,
    description: r.description,
    disabledReason: r.disabled_reason,
    failingSince: r.failing_since?.toISOString() ?? null,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

function toDelivery(r: DeliveryRow): DeliveryView {
  return {
    id: r.id,
    webhookId: r.webhook_id,
    eventType: r.event_type,
    payload: r.payload,
    status: r.status,
    attempts: r.attempts,
    attemptLog: r.attempt_log,
    nextAttemptAt: r.status === 'pending' ? r.next_attempt_at.toISOString() : null,
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    createdAt: r.created_at.toISOString(),
    deliveredAt: r.delivered_at?.toISOString() ?? null,
  };
}
