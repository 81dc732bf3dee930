// One session, live: the SDK's LiveTurns (one SSE stream, as a controller) gives the turns, the run's tool
// progress and what awaits a decision; the page also shows the whole tree, fetched again whenever a `tree` event
// says it changed.

import { useEffect, useState } from 'react';
import type { LiveTurnsView, Session, TreeView } from '@canopy/client';
import { errorText } from './format';

export interface SessionLive {
  view: LiveTurnsView | null;
  tree: TreeView | null;
  /** Progress payloads per tool use id, in the order they came. */
  progress: Record<string, unknown[]>;
  /** The event stream failed for good (e.g. the session does not exist). */
  failure: string | null;
}

export function useSessionLive(session: Session): SessionLive {
  const [view, setView] = useState<LiveTurnsView | null>(null);
  const [tree, setTree] = useState<TreeView | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  useEffect(() => {
    let closed = false;
    let treeRequests = 0;
    const loadTree = () => {
      const request = ++treeRequests;
      session.tree().then(
        (t) => {
          // Only the newest answer counts: an older one may land after it.
          if (request === treeRequests && !closed) setTree(t);
        },
        (err: unknown) => {
          if (!closed) setFailure(errorText(err));
        },
      );
    };
    setView(null);
    setTree(null);
    setFailure(null);
    const live = session.turns({ mode: 'controller' });
    const stops = [
      live.onEvent((event) => {
        if (event.type === 'snapshot' || event.type === 'tree') loadTree();
      }),
      live.subscribe(setView),
      live.onFailure((err) => setFailure(errorText(err))),
    ];
    return () => {
      closed = true;
      for (const stop of stops) stop();
      void live.close();
    };
  }, [session]);

  return { view, tree, progress: view?.progress ?? {}, failure };
}
