// The embedded runtime's CredentialNotices: one process is the whole deployment, so a notice goes to this
// process's listeners, synchronously, in publish order. Nothing is ever missed.

import type { CredentialNotice, CredentialNotices, Unsubscribe } from '../ports';
import { callListener, logListenerError, type ListenerErrorHandler } from './listener-errors';

export interface InProcessCredentialNoticesOptions {
  /** Where a throwing subscriber's error goes (default: an error log line). */
  onListenerError?: ListenerErrorHandler;
}

type Listener = (notice: CredentialNotice) => void;

export class InProcessCredentialNotices implements CredentialNotices {
  private readonly onListenerError: ListenerErrorHandler;
  private readonly listeners = new Set<{ listener: Listener }>();
  /** Notices published while delivery was running (a listener published): delivered after the current one. */
  private readonly undelivered: CredentialNotice[] = [];
  private delivering = false;
  private closed = false;

  constructor(options: InProcessCredentialNoticesOptions = {}) {
    this.onListenerError = options.onListenerError ?? logListenerError(InProcessCredentialNotices.name);
  }

  publish(notice: CredentialNotice): Promise<void> {
    if (this.closed) return Promise.reject(new Error('InProcessCredentialNotices is closed'));
    this.undelivered.push(notice);
    this.deliver();
    return Promise.resolve();
  }

  subscribe(listener: Listener): Promise<Unsubscribe> {
    if (this.closed) return Promise.reject(new Error('InProcessCredentialNotices is closed'));
    const entry = { listener };
    this.listeners.add(entry);
    return Promise.resolve(() => {
      this.listeners.delete(entry);
      return Promise.resolve();
    });
  }

  close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.undelivered.length = 0;
    return Promise.resolve();
  }

  private deliver(): void {
    if (this.delivering) return;
    this.delivering = true;
    try {
      for (let notice = this.undelivered.shift(); notice; notice = this.undelivered.shift()) {
        for (const entry of [...this.listeners]) {
          if (this.listeners.has(entry)) callListener(entry.listener, notice, this.onListenerError);
        }
      }
    } finally {
      this.delivering = false;
    }
  }
}
