// Sends the webhook outbox where runs execute (the embedded api; the workers of a distributed deployment). Each
// tick leases due deliveries (the database is the queue: rows written with the events that caused them, leased
// with FOR UPDATE SKIP LOCKED so senders across processes never send one at once), sends them in parallel, and
// settles each: delivered; retried with exponential backoff and jitter while younger than the retry window; failed
// after it. A sender that dies mid-delivery leaves its lease to expire, and another sends the row again: at least
// once, deduplicated by receivers through webhook-id. An endpoint failing for the whole window is disabled.

import type { TargetPolicy } from '@canopy/common';
import type { ClaimedDelivery, WebhooksRepository } from '@canopy/store';
import type { EngineLogger } from '../session-deps';
import { WebhookSender } from './webhook-sender';

export interface WebhookDispatcherOptions {
  pollMs: number;
  timeoutMs: number;
  retryBaseMs: number;
  retryWindowMs: number;
  /** Where webhook URLs may lead (the SSRF guard's policy). */
  targets: TargetPolicy;
  /** Deliveries leased per tick. */
  batch?: number;
  /** Start sending at application bootstrap (where runs execute). */
  autoStart?: boolean;
}

const MAX_BACKOFF_MS = 3_600_000;
/** A delivery of a disabled endpoint waits this long before it is looked at again. */
const DISABLED_RECHECK_MS = 60_000;
/** How long stopping waits for the attempts in flight. */
const STOP_WAIT_MS = 2_000;

/** The delay before retry number `attempts` (1-based): base × 2^(attempts−1), capped, ±20 % jitter. */
export function backoffMs(attempts: number, baseMs: number, random = Math.random): number {
  const exp = Math.min(baseMs * 2 ** Math.max(0, attempts - 1), MAX_BACKOFF_MS);
  return Math.round(exp * (0.8 + 0.4 * random()));
}

export class WebhookDispatcher {
  private readonly sender: WebhookSender;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly options: WebhookDispatcherOptions,
    private readonly logger: EngineLogger,
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
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // An attempt in flight is not waited for past a moment: its lease expires and another sender retries it.
    let wait: NodeJS.Timeout | undefined;
    await Promise.race([
      this.running?.catch(() => undefined),
      new Promise<void>((resolve) => (wait = setTimeout(resolve, STOP_WAIT_MS))),
    ]);
    clearTimeout(wait);
  }

  /** Sends what is due now (a tick); answers how many deliveries it settled. */
  async tick(): Promise<number> {
    const batch = this.options.batch ?? 20;
    const claimed = await this.repo.claimDue(batch, this.leaseMs);
    await Promise.all(claimed.map((d) => this.deliver(d)));
    return claimed.length;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick().then(
        (n) => this.schedule(n > 0 ? 0 : this.options.pollMs),
        (err: unknown) => {
          this.logger.warn('webhook sender tick failed', { err });
          this.schedule(this.options.pollMs);
        },
      );
    }, delayMs);
    this.timer.unref?.();
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    if (!d.enabled) {
      await this.repo.release(d, DISABLED_RECHECK_MS);
      return;
    }
    const result = await this.sender.send({
      url: d.url,
      secret: d.secret,
      messageId: `msg_${d.id}`,
      body: JSON.stringify(d.payload),
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
    // would disable the endpoint (read twice, the endpoint could be disabled with this delivery left pending, and
    // a disabled endpoint's pending deliveries wait for it to be enabled again).
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
