// The retention sweep, run by the repeating `retention-sweep` timer (a BullMQ job scheduler when distributed, an
// interval embedded): in every tenant whose policy deletes sessions, deletes those not updated for longer than it
// allows, in batches, never one that is busy or paused; announces each as `closed {reason: "expired"}` on the
// activity feed (metrics count them there) and stops serving it wherever it is live. It also deletes what imports
// whose process died left staged (hidden, never published).

import type { ActivityFeed, EventBus } from '@canopy/realtime';
import type { RunControl } from '@canopy/queue';
import type { SessionCatalogStore } from '@canopy/store';
import type { RetentionRepository } from '@canopy/tenancy';
import type { EngineLogger } from '@canopy/session';

export class RetentionSweeper {
  constructor(
    private readonly retention: RetentionRepository,
    private readonly feed: ActivityFeed,
    private readonly bus: EventBus,
    private readonly control: RunControl,
    private readonly logger: EngineLogger,
    private readonly batch: number,
    private readonly catalog: SessionCatalogStore,
  ) {}

  /** One sweep over every tenant; answers how many sessions expired. */
  async sweep(now = new Date()): Promise<number> {
    await this.discardAbandonedImports(now);
    let expired = 0;
    for (const { tenantId, policy } of await this.retention.tenantsToSweep()) {
      try {
        for (;;) {
          const ids = await this.retention.expireBatch(tenantId, policy, this.batch, now);
          for (const id of ids) await this.announce(tenantId, id);
          expired += ids.length;
          if (ids.length < this.batch) break;
        }
      } catch (err) {
        // One tenant's failure does not stop the others; the next sweep tries again.
        this.logger.error('retention sweep failed for a tenant', { err, tenantId });
      }
    }
    return expired;
  }

  /** Deletes the staged sessions of imports whose process died (nobody saw them: nothing to announce). */
  private async discardAbandonedImports(now: Date): Promise<void> {
    try {
      for (const staged of await this.catalog.abandonedImports(now, 100)) {
        await this.catalog.discardImport(staged.scope, staged.id, staged.token, this.batch);
        this.logger.warn('discarded an abandoned import', {
          tenantId: staged.scope.tenantId,
          sessionId: staged.id,
        });
      }
    } catch (err) {
      this.logger.error('the sweep of abandoned imports failed', { err });
    }
  }

  private async announce(tenantId: string, id: string): Promise<void> {
    try {
      await this.feed.publish({ tenantId, type: 'closed', data: { id, reason: 'expired' }, at: Date.now() });
      await this.control.closeEverywhere(tenantId, id, 'expired');
      await this.bus.forget(tenantId, id);
    } catch (err) {
      // The session is gone already; what is left is best effort.
      this.logger.warn('expired session not announced', { err, tenantId, sessionId: id });
    }
  }
}
