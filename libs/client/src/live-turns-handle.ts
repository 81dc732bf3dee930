// The live turns of a session as an object a UI holds: it reads the session's events in the background, keeps
// the view current and tells its listeners after every change.

import type { SessionEventBody } from '@canopy/core';

import { CanopyError } from './errors';
import type { NodeId } from '@canopy/core';
import { TurnsProjection, type LiveTurnsView, type TurnsPage } from './live-turns';

/** Reads a page of earlier turns (GET …/turns with `before` and `limit`; `before` null: the last page). */
export type EarlierTurns = (before: NodeId | null, limit: number) => Promise<TurnsPage>;

type Listener = (view: LiveTurnsView) => void;

export class LiveTurns {
  private readonly projection = new TurnsProjection();
  private readonly listeners = new Set<Listener>();
  private readonly failureListeners = new Set<(err: Error) => void>();
  private readonly eventListeners = new Set<(event: SessionEventBody) => void>();
  private readonly controller = new AbortController();
  private latest: LiveTurnsView | null = null;
  private failure: Error | null = null;
  private readonly done: Promise<void>;

  constructor(
    events: (signal: AbortSignal) => AsyncIterable<SessionEventBody>,
    signal?: AbortSignal,
    private readonly earlierTurns?: EarlierTurns,
  ) {
    signal?.addEventListener('abort', () => void this.close(), { once: true });
    this.done = this.pump(events(this.controller.signal));
  }

  /** The view as of the last event; null until the first snapshot arrived. */
  get current(): LiveTurnsView | null {
    return this.latest;
  }

  /** Calls `listener` after every change (and at once if a view exists); answers how to stop. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    if (this.latest) listener(this.latest);
    return () => this.listeners.delete(listener);
  }

  /** Calls `listener` if the event stream fails for good (e.g. not_found); answers how to stop. */
  onFailure(listener: (err: Error) => void): () => void {
    if (this.failure) listener(this.failure);
    else this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /**
   * Calls `listener` with every event as it arrives, before the view is updated (for what the view does not
   * keep, e.g. refreshing a tree on `tree`); answers how to stop.
   */
  onEvent(listener: (event: SessionEventBody) => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  /** The first view that satisfies `predicate` (the current one if it does). */
  until(predicate: (view: LiveTurnsView) => boolean, timeoutMs = 30_000): Promise<LiveTurnsView> {
    return new Promise((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      const timer = setTimeout(() => {
        stop();
        reject(
          new CanopyError({ code: 'aborted', message: `no such view within ${timeoutMs} ms`, status: 0 }),
        );
      }, timeoutMs);
      const onFailure = (err: Error) => {
        clearTimeout(timer);
        stop();
        reject(err);
      };
      this.failureListeners.add(onFailure);
      const unsubscribe = this.subscribe((view) => {
        if (!predicate(view)) return;
        clearTimeout(timer);
        queueMicrotask(() => stop());
        resolve(view);
      });
      const stop = () => {
        unsubscribe();
        this.failureListeners.delete(onFailure);
      };
    });
  }

  /** The first view (after the snapshot). */
  ready(timeoutMs?: number): Promise<LiveTurnsView> {
    return this.until(() => true, timeoutMs);
  }

  /**
   * Loads a page of up to `limit` turns before the first one in the view (a long session's snapshot holds its
   * recent turns only; `view.hasEarlier` says whether there are more). Answers whether the view changed: false when
   * there is nothing earlier, or the view moved to another branch while the page was read.
   */
  async loadEarlier(limit = 50): Promise<boolean> {
    if (!this.earlierTurns) return false;
    const anchor = this.projection.earlierAnchor();
    if (anchor === undefined) return false;
    const page = await this.earlierTurns(anchor, limit);
    if (!this.projection.addEarlier(anchor, page)) return false;
    this.latest = this.projection.view();
    if (this.latest) for (const listener of [...this.listeners]) listener(this.latest);
    return true;
  }

  /** Stops reading events. */
  async close(): Promise<void> {
    this.controller.abort();
    await this.done;
  }

  private async pump(events: AsyncIterable<SessionEventBody>): Promise<void> {
    try {
      for await (const event of events) {
        for (const listener of [...this.eventListeners]) listener(event);
        if (!this.projection.apply(event)) continue;
        this.latest = this.projection.view();
        if (this.latest) for (const listener of [...this.listeners]) listener(this.latest);
      }
    } catch (err) {
      if (this.controller.signal.aborted) return;
      const failure = err instanceof Error ? err : new Error(String(err));
      this.failure = failure;
      for (const listener of [...this.failureListeners]) listener(failure);
    }
  }
}
