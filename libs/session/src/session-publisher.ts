// Publishes a session's events to the bus and mirrors the ones dashboards care about (status, title) into the
// tenant's activity feed, so the two never disagree.

import type { ActivityEvent, SessionEvent, SessionEventInput } from '@canopy/core';
import type { ActivityFeed, EventBus } from '@canopy/realtime';
import type { EngineLogger } from './session-deps';

export class SessionPublisher {
  constructor(
    private readonly bus: EventBus,
    private readonly feed: ActivityFeed,
    private readonly logger: EngineLogger,
  ) {}

  private readonly listeners = new Set<(count: number) => void>();

  /** Tells `listener` how many events each publish carried (metrics); the returned function stops it. */
  onPublished(listener: (count: number) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  async publish(tenantId: string, sessionId: string, events: SessionEventInput[]): Promise<SessionEvent[]> {
    if (events.length === 0) return [];
    const published = await this.bus.publish(tenantId, sessionId, events);
    for (const listener of this.listeners) listener(published.length);
    for (const e of events) {
      if (e.type === 'status') {
        await this.activity({
          tenantId,
          type: 'status',
          data: { id: sessionId, status: e.data.status },
          at: Date.now(),
        });
      } else if (e.type === 'title') {
        await this.activity({
          tenantId,
          type: 'title',
          data: { id: sessionId, title: e.data.title },
          at: Date.now(),
        });
      }
    }
    return published;
  }

  /** Activity is best effort: a feed failure is logged, never fails the command that caused it. */
  async activity(event: ActivityEvent): Promise<void> {
    try {
      await this.feed.publish(event);
    } catch (err) {
      this.logger.warn('activity feed publish failed', { err, type: event.type });
    }
  }
}
