// One session, live: the SDK's LiveTurns (one SSE stream, as a controller, or as an observer when watching) gives
// the turns, the run's tool progress and what awaits a decision; the page also shows the whole tree, fetched again
// whenever a `tree` event says it changed. A session that does not exist (or is not this credential's) stops
// everything at once: no stream left retrying, no tree request.

import { useEffect, useState } from 'react';
import { isCanopyError, type LiveTurnsView, type Session, type TreeView } from '@canopy/client';
import { errorText } from './format';

export interface SessionLive {
  view: LiveTurnsView | null;
  tree: TreeView | null;
  /** Progress payloads per tool use id, in the order they came. */
  progress: Record<string, unknown[]>;
  /** The event stream failed for good. */
  failure: string | null;
  /** The session does not exist for this credential. */
  notFound: boolean;
}

export function useSessionLive(session: Session, mode: 'controller' | 'observer'): SessionLive {
  const [view, setView] = useState<LiveTurnsView | null>(null);
  const [tree, setTree] = useState<TreeView | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [notFound, setNotFound] = useState(false);

  useEffect(() => {
    let closed = false;
    let treeRequests = 0;
    const live = session.turns({ mode });
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
    const stops = [
      live.onEvent((event) => {
        if (event.type === 'snapshot' || event.type === 'tree') loadTree();
      }),
      live.subscribe(setView),
      live.onFailure(fail),
    ];
    return () => {
      closed = true;
      for (const stop of stops) stop();
      void live.close();
    };
  }, [session, mode]);

  return { view, tree, progress: view?.progress ?? {}, failure, notFound };
}
