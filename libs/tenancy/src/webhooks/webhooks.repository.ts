// Webhook endpoints and their deliveries. Endpoints are a tenant's (CRUD under its row-level security, each change
// audited in its transaction); deliveries are written by the outbox triggers (migration 20261206020000) and taken
// by senders: `claimDue` leases due rows across tenants (FOR UPDATE SKIP LOCKED, so senders never take the same
// row at once), a few per endpoint and per tenant at most and in turns across endpoints; `recordAttempt` settles
// one. A lease that expires (its sender died) makes the row due again. A disabled endpoint's deliveries are
// settled as not sent.

import { Injectable } from '@nestjs/common';
import type { Scope } from '@canopy/core';
import { CanopyException, type TraceCarrier } from '@canopy/common';
import { Database, isUuid, query, raw, sql, writeAudit, type SqlTx } from '@canopy/store';

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

/** How many attempts the lease lets be in flight. */
export interface LeaseBounds {
  /** Per endpoint, across the deployment. */
  perEndpoint: number;
  /** Per tenant, over all its endpoints, across the deployment. */
  perTenant: number;
  /**
   * The calling sender's own attempts in flight, by tenant: a tenant never counts fewer than these, though the
   * rows of some are gone (their endpoint was deleted while they were in flight).
   */
  held?: ReadonlyMap<string, number>;
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
  /** The trace context the delivery was written in (OpenTelemetry on), null otherwise. */
  trace: TraceCarrier | null;
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
/**
 * The advisory lock class of a tenant's webhook lease (the lock's second key is a hash of the tenant id: two
 * tenants that share one only lease one at a time).
 */
const TENANT_LEASE_LOCK = 0x77686b31;

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
      // Nothing sends a disabled endpoint's deliveries: they are settled now, saying why.
      if (before.enabled && !after.enabled) await settleOfDisabled(tx, id);
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

  /**
   * Makes a delivery due now again (its attempts so far stay in its log); not_found for another's. One with an
   * attempt in flight keeps its lease: that attempt settles it, and no second one starts beside it (which would
   * take a slot its endpoint's and its tenant's counts no longer see).
   */
  async retry(scope: Pick<Scope, 'tenantId'>, webhookId: string, deliveryId: string): Promise<DeliveryView> {
    if (!isUuid(webhookId) || !isUuid(deliveryId)) throw CanopyException.notFound('delivery');
    return this.db.withTenantSql(scope, async (tx) => {
      const [row] = await tx.query<DeliveryRow>(
        `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(),
                locked_until = CASE WHEN locked_until >= now() THEN locked_until END
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
   * dies mid-attempt has used it). A row is due when pending, its time has come, and no live lease holds it. An
   * endpoint never has more than `perEndpoint` live leases across the deployment, nor a tenant more than
   * `perTenant` over all its endpoints (attempts in flight, and a dead sender's until they expire), and the lease
   * goes round the endpoints with due rows, fairly across tenants: each tenant's endpoint waiting longest, then
   * each one's next, ...; then each endpoint's second row, and so on. So a backlog of one endpoint, or the hanging
   * attempts of one endpoint or of one tenant's many, never takes what other endpoints' deliveries need.
   *
   * Two statements, so the limits hold across senders: the first locks the endpoints it will lease for (FOR NO
   * KEY UPDATE SKIP LOCKED) and then their tenants (a transaction-level advisory lock, tried: another sender
   * leasing for one of them right now is left to it), the second counts their live leases in a snapshot taken
   * after those locks (whatever another sender leased for them has committed) and leases the free slots. The
   * counts are of live leases, which are always on pending rows: the first statement sums each tenant's over its
   * endpoints with pending rows, which it walks anyway; the second reads the index of leased rows, as small as
   * what is in flight. A tenant counts at least the caller's own attempts of it (`held`): deleting an endpoint
   * deletes its deliveries and their leases with it, not the attempts in flight.
   */
  async claimDue(limit: number, leaseMs: number, bounds: LeaseBounds): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    const { perEndpoint, perTenant } = bounds;
    const held = [...(bounds.held ?? new Map<string, number>())];
    const heldTenants = held.map(([tenantId]) => tenantId);
    const heldCounts = held.map(([, n]) => n);
    return this.db.withAdminSql('webhook senders: lease due deliveries of every tenant', async (tx) => {
      const hooks = await tx.query<{ id: string; mine: boolean }>(
        // The endpoints with pending deliveries, by a skip scan of the pending index (one probe per endpoint,
        // however long its backlog), with their live leases and their tenant's; of those, the ones with a due row
        // free, a free slot and a free slot of their tenant, in turns per tenant (no more endpoints of a tenant
        // than it has free slots, so a tenant at its limit takes no place in the lease).
        `WITH RECURSIVE pending AS (
           (SELECT webhook_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY webhook_id LIMIT 1)
           UNION ALL
           SELECT (SELECT d.webhook_id FROM webhook_deliveries d
                    WHERE d.status = 'pending' AND d.webhook_id > p.webhook_id ORDER BY d.webhook_id LIMIT 1)
             FROM pending p WHERE p.webhook_id IS NOT NULL),
         leased AS MATERIALIZED (
           SELECT p.webhook_id, w.tenant_id,
                  (SELECT count(*) FROM webhook_deliveries l
                    WHERE l.webhook_id = p.webhook_id AND l.locked_until >= now()) AS n
             FROM pending p JOIN webhooks w ON w.id = p.webhook_id),
         counted AS (
           SELECT l.webhook_id, l.tenant_id, l.n,
                  greatest(sum(l.n) OVER (PARTITION BY l.tenant_id), coalesce(held.n, 0)) AS tenant_n
             FROM leased l
             LEFT JOIN unnest($4::uuid[], $5::int[]) AS held(tenant_id, n) ON held.tenant_id = l.tenant_id),
         ready AS (
           SELECT c.webhook_id, c.tenant_id, c.tenant_n, due.at,
                  row_number() OVER (PARTITION BY c.tenant_id ORDER BY due.at, c.webhook_id) AS turn
             FROM counted c
             CROSS JOIN LATERAL (
               SELECT d.next_attempt_at AS at FROM webhook_deliveries d
                WHERE d.webhook_id = c.webhook_id AND d.status = 'pending' AND d.next_attempt_at <= now()
                  AND (d.locked_until IS NULL OR d.locked_until < now())
                ORDER BY d.next_attempt_at LIMIT 1) due
            WHERE c.n < $2 AND c.tenant_n < $3),
         picked AS MATERIALIZED (
           SELECT w.id, w.tenant_id, r.turn, r.at FROM webhooks w JOIN ready r ON r.webhook_id = w.id
            WHERE r.turn <= $3 - r.tenant_n
            ORDER BY r.turn, r.at, w.id
            LIMIT $1
            FOR NO KEY UPDATE OF w SKIP LOCKED)
         SELECT id::text AS id, pg_try_advisory_xact_lock(${TENANT_LEASE_LOCK}, hashtext(tenant_id::text)) AS mine
           FROM picked ORDER BY turn, at, id`,
        [limit, perEndpoint, perTenant, heldTenants, heldCounts],
      );
      const mine = hooks.filter((h) => h.mine);
      if (mine.length === 0) return [];
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
        trace_context: string | null;
      }>(
        `WITH hooks AS (
           SELECT h.id, h.turn FROM unnest($1::uuid[]) WITH ORDINALITY AS h(id, turn)),
         tenants AS (
           SELECT c.tenant_id, $5 - greatest(c.n, coalesce(held.n, 0)) AS free
             FROM (SELECT t.tenant_id, count(l.id) AS n
                     FROM (SELECT DISTINCT w.tenant_id FROM hooks h JOIN webhooks w ON w.id = h.id) t
                     LEFT JOIN webhook_deliveries l ON l.tenant_id = t.tenant_id AND l.locked_until >= now()
                    GROUP BY t.tenant_id) c
             LEFT JOIN unnest($6::uuid[], $7::int[]) AS held(tenant_id, n) ON held.tenant_id = c.tenant_id),
         free AS (
           SELECT d.id, d.tenant_id, d.webhook_id, d.next_attempt_at, h.turn FROM hooks h
            CROSS JOIN LATERAL (
              SELECT x.id, x.tenant_id, x.webhook_id, x.next_attempt_at FROM webhook_deliveries x
               WHERE x.webhook_id = h.id AND x.status = 'pending' AND x.next_attempt_at <= now()
                 AND (x.locked_until IS NULL OR x.locked_until < now())
               ORDER BY x.next_attempt_at, x.id
               LIMIT greatest($3 - (SELECT count(*) FROM webhook_deliveries l
                                     WHERE l.webhook_id = h.id AND l.locked_until >= now()), 0)
               FOR UPDATE SKIP LOCKED) d),
         turns AS (
           SELECT id, tenant_id, turn,
                  row_number() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, id) AS nth
             FROM free),
         due AS (
           SELECT id FROM (
             SELECT s.id, s.turn, s.nth, t.free,
                    row_number() OVER (PARTITION BY s.tenant_id ORDER BY s.nth, s.turn) AS tenant_nth
               FROM turns s JOIN tenants t ON t.tenant_id = s.tenant_id) f
            WHERE tenant_nth <= free
            ORDER BY nth, turn
            LIMIT $2)
         UPDATE webhook_deliveries d
            SET locked_until = now() + make_interval(secs => $4::float8 / 1000), attempts = d.attempts + 1
           FROM due, webhooks w
          WHERE d.id = due.id AND w.id = d.webhook_id
         RETURNING d.id::text AS id, d.tenant_id::text AS tenant_id, d.webhook_id::text AS webhook_id, w.url,
                   w.secret, w.enabled, d.payload, d.attempts, d.created_at, d.trace_context`,
        [mine.map((h) => h.id), limit, perEndpoint, leaseMs, perTenant, heldTenants, heldCounts],
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
        trace: r.trace_context ? { traceparent: r.trace_context } : null,
      }));
    });
  }

  /**
   * Settles an attempt: delivered; or due again at `retryAt`; or failed for good (retryAt null). A failure also
   * starts (or continues) the endpoint's failure streak, and disables it once the streak is older than
   * `disableAfterMs`; a success ends the streak. A failure on a disabled endpoint (disabled by this attempt, or
   * while it was in flight) is not retried, and disabling settles the endpoint's other pending deliveries as not
   * sent (see settleOfDisabled). The endpoint's row is updated first, as every writer of both does (no deadlock
   * with a PATCH that disables it).
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
          `UPDATE webhooks SET failing_since = NULL WHERE id = $1::uuid AND failing_since IS NOT NULL`,
          [delivery.webhookId],
        );
        await tx.query(
          `UPDATE webhook_deliveries
              SET status = 'delivered', delivered_at = now(), locked_until = NULL, last_status_code = $2,
                  last_error = NULL, attempt_log = (attempt_log || $3::jsonb) #- '{${-ATTEMPT_LOG_MAX - 1}}'
            WHERE id = $1::uuid`,
          [delivery.id, attempt.statusCode, entry],
        );
        return { disabled: false };
      }
      const [hook] = await tx.query<{
        enabled: boolean;
        failing_since: Date;
        disabled_reason: string | null;
      }>(
        // The streak starts with the first event the endpoint could not take (when it was created).
        `UPDATE webhooks SET failing_since = coalesce(failing_since, $2::timestamptz)
          WHERE id = $1::uuid RETURNING enabled, failing_since, disabled_reason`,
        [delivery.webhookId, delivery.createdAt],
      );
      const error = attempt.error ?? `HTTP ${attempt.statusCode}`;
      const disabling =
        !!hook?.enabled && outcome.at - hook.failing_since.getTime() >= outcome.disableAfterMs;
      let reason = hook && !hook.enabled ? disabledWhy(hook.disabled_reason) : null;
      if (disabling) {
        reason = `disabled after failing since ${hook.failing_since.toISOString()} (last: ${error})`;
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
      }
      // A disabled endpoint's delivery is not retried: it fails now, saying why.
      const retryAt = reason === null ? outcome.retryAt : null;
      const lastError =
        reason !== null && outcome.retryAt !== null
          ? `${error}; not retried: the endpoint was ${reason}`
          : error;
      await tx.query(
        `UPDATE webhook_deliveries
            SET status = CASE WHEN $2::timestamptz IS NULL THEN 'failed' ELSE 'pending' END,
                next_attempt_at = coalesce($2::timestamptz, next_attempt_at), locked_until = NULL,
                last_status_code = $3, last_error = $4,
                attempt_log = (attempt_log || $5::jsonb) #- '{${-ATTEMPT_LOG_MAX - 1}}'
          WHERE id = $1::uuid`,
        [delivery.id, retryAt, attempt.statusCode, lastError, entry],
      );
      if (disabling) await settleOfDisabled(tx, delivery.webhookId);
      return { disabled: disabling };
    });
  }

  /**
   * A leased delivery of an endpoint found disabled at the lease (its event raced the disabling): settled as not
   * sent, with why, and its lease not counted as an attempt. Enabled again meanwhile: released, due now.
   */
  async settleUnsent(delivery: ClaimedDelivery): Promise<void> {
    await this.db.withTenantSql({ tenantId: delivery.tenantId }, (tx) =>
      tx.query(
        `UPDATE webhook_deliveries d
            SET locked_until = NULL, attempts = greatest(d.attempts - 1, 0),
                status = CASE WHEN w.enabled THEN d.status ELSE 'failed' END,
                last_error = CASE WHEN w.enabled THEN d.last_error ELSE ${unsentErrorSql('d.attempts - 1')} END
           FROM webhooks w
          WHERE d.id = $1::uuid AND w.id = d.webhook_id`,
        [delivery.id],
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

/** Why a disabled endpoint's deliveries are not sent: its disabledReason, or its owner's PATCH. */
function disabledWhy(reason: string | null): string {
  return reason ?? 'disabled by its owner';
}

/** The lastError of a delivery settled unsent for a disabled endpoint `w` (SQL), given the attempts it had. */
function unsentErrorSql(attempts: string): string {
  return `CASE WHEN ${attempts} = 0 THEN 'not sent' ELSE 'not retried' END || ': the endpoint was '
          || coalesce(w.disabled_reason, '${disabledWhy(null)}')`;
}

/**
 * Settles the pending deliveries of a disabled endpoint as failed, saying why, with no attempt made: nothing
 * sends them while it is disabled. Those under a live lease are left to their attempt (which, failing, is not
 * retried either).
 */
async function settleOfDisabled(tx: SqlTx, webhookId: string): Promise<void> {
  await tx.query(
    `UPDATE webhook_deliveries d SET status = 'failed', locked_until = NULL, last_error = ${unsentErrorSql('d.attempts')}
       FROM webhooks w
      WHERE w.id = $1::uuid AND d.webhook_id = w.id AND d.status = 'pending'
        AND (d.locked_until IS NULL OR d.locked_until < now())`,
    [webhookId],
  );
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
