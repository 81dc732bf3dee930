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

  publish(tenantId: string, sessionId: string, events: SessionEventInput[]): Promise<SessionEvent[]> {
    if (events.length === 0) return Promise.resolve([]);
    const published = this.bus.publish(tenantId, sessionId, events);
    // Most batches are a run's deltas: nothing for the feed, so no await of our own on their way.
    if (!events.some((e) => e.type === 'status' || e.type === 'title')) {
      return this.listeners.size === 0 ? published : published.then((list) => this.counted(list));
    }
    return published.then(async (list) => {
      this.counted(list);
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
      return list;
    });
  }

  private counted(published: SessionEvent[]): SessionEvent[] {
    for (const listener of this.listeners) listener(published.length);
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
