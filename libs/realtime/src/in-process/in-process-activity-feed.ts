// The embedded runtime's ActivityFeed: per-tenant and all-tenants listeners in this process's memory, called
// synchronously in publish order.

import type { ActivityEvent } from '@canopy/core';

import type { ActivityFeed, Unsubscribe } from '../ports';
import { callListener, logListenerError, type ListenerErrorHandler } from './listener-errors';

export interface InProcessActivityFeedOptions {
  /** Where a throwing subscriber's error goes (default: an error log line). */
  onListenerError?: ListenerErrorHandler;
}

type Listener = (event: ActivityEvent) => void;

interface Subscription {
  /** null: every tenant. */
  tenantId: string | null;
  listener: Listener;
}

export class InProcessActivityFeed implements ActivityFeed {
  private readonly onListenerError: ListenerErrorHandler;
  private readonly subscriptions = new Set<Subscription>();
  /** Events published while delivery was running (a listener published): delivered after the current one. */
  private readonly undelivered: ActivityEvent[] = [];
  private delivering = false;
  private closed = false;

  constructor(options: InProcessActivityFeedOptions = {}) {
    this.onListenerError = options.onListenerError ?? logListenerError(InProcessActivityFeed.name);
  }

  publish(event: ActivityEvent): Promise<void> {
    if (this.closed) return Promise.reject(new Error('InProcessActivityFeed is closed'));
    this.undelivered.push(event);
    this.deliver();
    return Promise.resolve();
  }

  subscribe(tenantId: string | null, listener: Listener): Promise<Unsubscribe> {
    if (this.closed) return Promise.reject(new Error('InProcessActivityFeed is closed'));
    const subscription: Subscription = { tenantId, listener };
    this.subscriptions.add(subscription);
    return Promise.resolve(() => {
      this.subscriptions.delete(subscription);
      return Promise.resolve();
    });
  }

  close(): Promise<void> {
    this.closed = true;
    this.subscriptions.clear();
    this.undelivered.length = 0;
    return Promise.resolve();
  }

  private deliver(): void {
    if (this.delivering) return;
    this.delivering = true;
    try {
      for (let event = this.undelivered.shift(); event; event = this.undelivered.shift()) {
        for (const subscription of [...this.subscriptions]) {
          if (!this.subscriptions.has(subscription)) continue; // removed by an earlier listener
          if (subscription.tenantId !== null && subscription.tenantId !== event.tenantId) continue;
          callListener(subscription.listener, event, this.onListenerError);
        }
      }
    } finally {
      this.delivering = false;
    }
  }
}
