// The playground: the tenant's sessions (kept current from the activity feed), a form to create one, and the
// chosen session's chat and tree.

import { useCallback, useEffect, useMemo, useState } from 'react';
import type { Canopy, SessionInfo } from '@canopy/client';
import { ChatPanel } from './chat-panel';
import { errorText } from './format';
import { NewSessionForm } from './new-session-form';
import { sessionHref } from './route';

/** How often a user token's session list is fetched again (it has no activity feed to follow). */
const POLL_MS = 5_000;

export function Playground({
  canopy,
  sessionId,
  followActivity,
}: {
  canopy: Canopy;
  sessionId: string | null;
  /** Keep the list current from the tenant's activity feed (API keys); false polls it (user tokens). */
  followActivity: boolean;
}) {
  const [sessions, setSessions] = useState<SessionInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  const refresh = useCallback(async () => {
    try {
      setSessions((await canopy.sessions.list({ limit: 100 })).data);
      setError(null);
    } catch (err) {
      setError(errorText(err));
    }
  }, [canopy]);

  useEffect(() => {
    void refresh();
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    // A user token has no activity feed: its list is polled instead.
    const poll = followActivity ? undefined : setInterval(() => void refresh(), POLL_MS);
    if (followActivity) {
      // Titles and statuses change as runs go: follow the tenant's activity (at most one refresh per 200 ms).
      void (async () => {
        try {
          for await (const _event of canopy.activity({ signal: controller.signal })) {
            timer ??= setTimeout(() => {
              timer = undefined;
              void refresh();
            }, 200);
          }
        } catch {
          // Without the feed the list still refreshes on creation.
        }
      })();
    }
    return () => {
      clearTimeout(timer);
      clearInterval(poll);
      controller.abort();
    };
  }, [canopy, refresh, followActivity]);

  const session = useMemo(() => (sessionId ? canopy.session(sessionId) : null), [canopy, sessionId]);

  return (
    <main className="playground">
      <aside className="sidebar">
        <NewSessionForm
          canopy={canopy}
          onCreated={(info) => {
            setSessions((list) => [info, ...(list ?? []).filter((s) => s.id !== info.id)]);
            location.hash = sessionHref(info.id);
          }}
        />
        <h2>Sessions</h2>
        {error && <p className="error">{error}</p>}
        {sessions === null ? (
          <p className="muted">Loading…</p>
        ) : sessions.length === 0 ? (
          <p className="muted">No sessions yet.</p>
        ) : (
          <ul className="session-list" data-testid="session-list">
            {sessions.map((s) => (
              <li key={s.id}>
                <a
                  href={sessionHref(s.id)}
                  className={s.id === sessionId ? 'current' : ''}
                  data-testid="session-item"
                  data-session-id={s.id}
                >
                  <span className="title">{s.title ?? s.id}</span>
                  <span className="meta">
                    {s.model} · <span className={`status status-${s.status}`}>{s.status}</span>
                  </span>
                </a>
              </li>
            ))}
          </ul>
        )}
      </aside>
      {session ? (
        <ChatPanel key={session.id} session={session} />
      ) : (
        <section className="empty">
          <p>Create a session or pick one on the left.</p>
        </section>
      )}
    </main>
  );
}
