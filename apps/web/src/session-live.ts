// One session, live: its events (one SSE stream, as a controller) folded into the SDK's turn projection — the
// same view LiveTurns keeps — plus what that view leaves out and the page shows: the progress tool calls report
// (`tool_progress`) and the whole tree, fetched again whenever a `tree` event says it changed.

import { useEffect, useState } from 'react';
import { TurnsProjection, type LiveTurnsView, type Session, type TreeView } from '@canopy/client';
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
  const [progress, setProgress] = useState<Record<string, unknown[]>>({});
  const [failure, setFailure] = useState<string | null>(null);

  useEffect(() => {
    const controller = new AbortController();
    const projection = new TurnsProjection();
    let treeRequests = 0;
    const loadTree = () => {
      const request = ++treeRequests;
      session.tree().then(
        (t) => {
          // Only the newest answer counts: an older one may land after it.
          if (request === treeRequests && !controller.signal.aborted) setTree(t);
        },
        (err: unknown) => {
          if (!controller.signal.aborted) setFailure(errorText(err));
        },
      );
    };
    setView(null);
    setTree(null);
    setProgress({});
    setFailure(null);
    void (async () => {
      try {
        for await (const event of session.events({ mode: 'controller', signal: controller.signal })) {
          if (event.type === 'tool_progress') {
            const { toolUseId, payload } = event.data;
            setProgress((p) => ({ ...p, [toolUseId]: [...(p[toolUseId] ?? []), payload] }));
          }
          if (event.type === 'snapshot' || event.type === 'tree') loadTree();
          if (projection.apply(event)) setView(projection.view());
        }
      } catch (err) {
        if (!controller.signal.aborted) setFailure(errorText(err));
      }
    })();
    return () => controller.abort();
  }, [session]);

  return { view, tree, progress, failure };
}
