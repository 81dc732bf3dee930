// Sends the webhook outbox where runs execute (the embedded api; the workers of a distributed deployment). It
// leases due deliveries (the database is the queue: rows written with the events that caused them, leased with
// FOR UPDATE SKIP LOCKED so senders across processes never send one at once) into its free slots, sends each
// without waiting for the others, and leases again as attempts end: a slow or hanging endpoint holds only its own
// slots (at most WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT across the deployment, and all of a tenant's endpoints at
// most WEBHOOK_MAX_IN_FLIGHT_PER_TENANT; the lease takes turns across endpoints and tenants), never what other
// endpoints' deliveries need. Each attempt is settled: delivered;
// retried with exponential backoff and jitter while younger than the retry window; failed after it. A sender
// that dies mid-delivery leaves its lease to expire, and another sends the row again: at least once, deduplicated
// by receivers through webhook-id. An endpoint failing for the whole window is disabled, and a disabled
// endpoint's deliveries are settled as not sent.

import type { TargetPolicy } from '@canopy/common';
import type { ClaimedDelivery, WebhooksRepository } from './webhooks.repository';
import { WebhookSender } from './webhook-sender';

/** Where the dispatcher reports what went wrong (the session engine's logger is one). */
export interface WebhookLogger {
  warn(message: string, context?: Record<string, unknown>): void;
}

export interface WebhookDispatcherOptions {
  pollMs: number;
  timeoutMs: number;
  retryBaseMs: number;
  retryWindowMs: number;
  /** Where webhook URLs may lead (the SSRF guard's policy). */
  targets: TargetPolicy;
  /** Attempts this process has in flight at most. */
  maxInFlight: number;
  /** Attempts one endpoint has in flight at most, across the deployment. */
  maxInFlightPerEndpoint: number;
  /** Attempts one tenant's endpoints have in flight at most, all together, across the deployment. */
  maxInFlightPerTenant: number;
  /** Deliveries leased at once at most. */
  batch?: number;
  /** Start sending at application bootstrap (where runs execute). */
  autoStart?: boolean;
}

const MAX_BACKOFF_MS = 3_600_000;
/** How long stopping waits for the attempts in flight. */
const STOP_WAIT_MS = 2_000;

/** The delay before retry number `attempts` (1-based): base × 2^(attempts−1), capped, ±20 % jitter. */
export function backoffMs(attempts: number, baseMs: number, random = Math.random): number {
  const exp = Math.min(baseMs * 2 ** Math.max(0, attempts - 1), MAX_BACKOFF_MS);
  return Math.round(exp * (0.8 + 0.4 * random()));
}

export class WebhookDispatcher {
  private readonly sender: WebhookSender;
  private readonly inFlight = new Set<Promise<void>>();
  /** This process's attempts in flight by tenant (the lease counts a tenant at least these). */
  private readonly heldByTenant = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  /** The lease under way, if any (one at a time per process). */
  private leasing: Promise<void> | null = null;
  /** Woken while leasing (an attempt ended): lease again at once after it. */
  private again = false;
  private stopped = true;

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly options: WebhookDispatcherOptions,
    private readonly logger: WebhookLogger,
  ) {
    this.sender = new WebhookSender({ timeoutMs: options.timeoutMs, targets: options.targets });
  }

  /** The lease of one attempt: its timeout and then some (an expired lease lets another sender retry it). */
  get leaseMs(): number {
    return this.options.timeoutMs * 2 + 1_000;
  }

  onApplicationBootstrap(): void {
    if (this.options.autoStart) this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // Attempts in flight are not waited for past a moment: their leases expire and another sender retries them.
    let wait: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([this.leasing, ...this.inFlight]),
      new Promise<void>((resolve) => (wait = setTimeout(resolve, STOP_WAIT_MS))),
    ]);
    clearTimeout(wait);
  }

  /** Leases now (or right after the lease under way): at start, when an attempt ends, at each poll. */
  private wake(): void {
    if (this.stopped) return;
    if (this.leasing) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.leasing = this.lease().then(
      (full) => this.leased(full ? 0 : this.options.pollMs),
      (err: unknown) => {
        this.logger.warn('webhook sender lease failed', { err });
        this.leased(this.options.pollMs);
      },
    );
  }

  private leased(delayMs: number): void {
    this.leasing = null;
    const soon = this.again;
    this.again = false;
    if (this.stopped) return;
    this.timer = setTimeout(() => this.wake(), soon ? 0 : delayMs);
    this.timer.unref?.();
  }

  /**
   * Leases due deliveries into this process's free slots and starts their attempts, not waiting for them; answers
   * whether it got all it asked for (more may be due).
   */
  private async lease(): Promise<boolean> {
    const wanted = Math.min(this.options.batch ?? 20, this.options.maxInFlight - this.inFlight.size);
    // No free slot: an attempt that ends wakes this again.
    if (wanted <= 0) return false;
    const claimed = await this.repo.claimDue(wanted, this.leaseMs, {
      perEndpoint: this.options.maxInFlightPerEndpoint,
      perTenant: this.options.maxInFlightPerTenant,
      held: this.heldByTenant,
    });
    for (const d of claimed) {
      this.heldByTenant.set(d.tenantId, (this.heldByTenant.get(d.tenantId) ?? 0) + 1);
      const attempt: Promise<void> = this.deliver(d)
        .catch((err: unknown) =>
          // The attempt's result is lost; its lease expires and the delivery is sent again.
          this.logger.warn('webhook attempt could not be recorded', { err, webhookId: d.webhookId }),
        )
        .finally(() => {
          this.inFlight.delete(attempt);
          const held = (this.heldByTenant.get(d.tenantId) ?? 1) - 1;
          if (held > 0) this.heldByTenant.set(d.tenantId, held);
          else this.heldByTenant.delete(d.tenantId);
          this.wake();
        });
      this.inFlight.add(attempt);
    }
    return claimed.length === wanted;
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    if (!d.enabled) {
      // Its event raced the disabling: nothing sends a disabled endpoint's deliveries.
      await this.repo.settleUnsent(d);
      return;
    }
    const result = await this.sender.send({
      url: d.url,
      secret: d.secret,
      messageId: `msg_${d.id}`,
      body: JSON.stringify(d.payload),
      ...(typeof d.payload.type === 'string' ? { eventType: d.payload.type } : {}),
      trace: d.trace,
    });
    const attempt = {
      attempt: d.attempts,
      at: new Date().toISOString(),
      statusCode: result.statusCode,
      latencyMs: result.latencyMs,
      error: result.error,
    };
    if (result.ok) {
      await this.repo.recordAttempt(d, attempt, { delivered: true });
      return;
    }
    // One clock reading for both decisions: the delivery's window is over exactly when its own failure streak
    // would disable the endpoint.
    const now = Date.now();
    const expired = now - d.createdAt.getTime() >= this.options.retryWindowMs;
    const retryAt = expired ? null : new Date(now + backoffMs(d.attempts, this.options.retryBaseMs));
    const { disabled } = await this.repo.recordAttempt(d, attempt, {
      delivered: false,
      retryAt,
      disableAfterMs: this.options.retryWindowMs,
      at: now,
    });
    if (disabled)
      this.logger.warn('webhook endpoint disabled after failing for the retry window', {
        webhookId: d.webhookId,
      });
  }
}
