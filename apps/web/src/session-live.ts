// One session, live: the SDK's LiveTurns (one SSE stream, as a controller, or as an observer when watching) gives
// the turns, the run's tool progress and what awaits a decision; the page also shows the whole tree, fetched again
// whenever a `tree` event says it changed. A session that does not exist (or is not this credential's) stops
// everything at once: no stream left retrying, no tree request. A long session's snapshot holds its recent turns
// only: earlier ones are read a page at a time (`loadEarlier`, as the reader scrolls up), with what became of the
// last page asked (loading, failed, loaded).

import { useCallback, useEffect, useRef, useState } from 'react';
import {
  isCanopyError,
  type LiveTurns,
  type LiveTurnsView,
  type Session,
  type TreeView,
} from '@canopy/client';
import { errorText } from './format';

/** Turns read per page of earlier turns. */
export const EARLIER_PAGE = 50;

/** Pages of earlier turns: one being read, the last one's failure, whether any was loaded. */
export interface EarlierPages {
  loading: boolean;
  error: string | null;
  loaded: boolean;
}

const NO_PAGES: EarlierPages = { loading: false, error: null, loaded: false };

export interface SessionLive {
  view: LiveTurnsView | null;
  tree: TreeView | null;
  /** Progress payloads per tool use id, in the order they came. */
  progress: Record<string, unknown[]>;
  /** The event stream failed for good. */
  failure: string | null;
  /** The session does not exist for this credential. */
  notFound: boolean;
  earlier: EarlierPages;
  /** Reads the page of turns before the first one shown (nothing while one is read or none is left). */
  loadEarlier: () => void;
}

export function useSessionLive(session: Session, mode: 'controller' | 'observer'): SessionLive {
  const [view, setView] = useState<LiveTurnsView | null>(null);
  const [tree, setTree] = useState<TreeView | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [notFound, setNotFound] = useState(false);
  const [earlier, setEarlier] = useState<EarlierPages>(NO_PAGES);
  const current = useRef<LiveTurns | null>(null);
  const reading = useRef(false);

  useEffect(() => {
    let closed = false;
    let treeRequests = 0;
    const live = session.turns({ mode });
    current.current = live;
    reading.current = false;
    const fail = (err: unknown) => {
      if (closed) return;
      if (isCanopyError(err, 'not_found')) {
        setNotFound(true);
        closed = true;
        void live.close();
      } else setFailure(errorText(err));
    };
    const loadTree = () => {
      const request = ++treeRequests;
      session.tree().then((t) => {
        // Only the newest answer counts: an older one may land after it.
        if (request === treeRequests && !closed) setTree(t);
      }, fail);
    };
    setView(null);
    setTree(null);
    setFailure(null);
    setNotFound(false);
    setEarlier(NO_PAGES);
    const stops = [
      live.onEvent((event) => {
        if (event.type === 'snapshot' || event.type === 'tree') loadTree();
      }),
      live.subscribe(setView),
      live.onFailure(fail),
    ];
    return () => {
      closed = true;
      current.current = null;
      for (const stop of stops) stop();
      void live.close();
    };
  }, [session, mode]);

  const loadEarlier = useCallback(() => {
    const live = current.current;
    if (!live || reading.current || !live.current?.hasEarlier) return;
    reading.current = true;
    setEarlier((e) => ({ ...e, loading: true, error: null }));
    // Answers for a session no longer shown are dropped.
    const settle = (next: (e: EarlierPages) => EarlierPages) => {
      if (current.current !== live) return;
      reading.current = false;
      setEarlier(next);
    };
    live.loadEarlier(EARLIER_PAGE).then(
      (changed) => settle((e) => ({ loading: false, error: null, loaded: e.loaded || changed })),
      (err: unknown) => settle((e) => ({ ...e, loading: false, error: errorText(err) })),
    );
  }, []);

  return { view, tree, progress: view?.progress ?? {}, failure, notFound, earlier, loadEarlier };
}
