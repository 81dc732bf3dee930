// The playground: the tenant's sessions (kept current from the activity feed) with a form to create one, the
// chosen session's chat and its tree. Below 900 px wide the sessions and the tree are panels over the chat,
// opened by toggles. Ctrl+Shift+O (⌘⇧O) starts a new chat with the form's settings.

import { useCallback, useEffect, useMemo, useState } from 'react';
import type { Canopy, SessionInfo } from '@canopy/client';
import { ChatPanel, type Panel } from './chat-panel';
import { errorText } from './format';
import { NewSessionForm } from './new-session-form';
import { sessionHref } from './route';
import { SessionList } from './session-list';

/** How often a user token's session list is fetched again (it has no activity feed to follow). */
const POLL_MS = 5_000;

export function Playground({
  canopy,
  sessionId,
  observe,
  followActivity,
}: {
  canopy: Canopy;
  sessionId: string | null;
  /** Watch the session read-only, as an observer. */
  observe: boolean;
  /** Keep the list current from the tenant's activity feed (API keys); false polls it (user tokens). */
  followActivity: boolean;
}) {
  const [sessions, setSessions] = useState<SessionInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [panel, setPanel] = useState<Panel>(null);

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
          // Without the feed the list still refreshes on changes made here.
        }
      })();
    }
    return () => {
      clearTimeout(timer);
      clearInterval(poll);
      controller.abort();
    };
  }, [canopy, refresh, followActivity]);

  // A new chat from anywhere: the form's current settings.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.shiftKey && e.key.toLowerCase() === 'o') {
        e.preventDefault();
        (document.getElementById('new-session-form') as HTMLFormElement | null)?.requestSubmit();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const session = useMemo(() => (sessionId ? canopy.session(sessionId) : null), [canopy, sessionId]);

  const rename = async (id: string, title: string) => {
    try {
      const updated = await canopy.session(id).update({ title });
      setSessions((list) => (list ?? []).map((s) => (s.id === id ? updated : s)));
      return true;
    } catch (err) {
      setError(errorText(err));
      return false;
    }
  };
  const remove = async (id: string) => {
    try {
      await canopy.session(id).delete();
      setSessions((list) => (list ?? []).filter((s) => s.id !== id));
      if (id === sessionId) location.hash = '#/';
      return true;
    } catch (err) {
      setError(errorText(err));
      return false;
    }
  };

  return (
    <main className="playground" data-panel={panel ?? ''}>
      <aside className="sidebar" aria-label="Sessions" data-testid="sidebar">
        <div className="panel-head">
          <span />
          <button
            type="button"
            className="panel-close"
            onClick={() => setPanel(null)}
            data-testid="close-panel"
          >
            Close
          </button>
        </div>
        <NewSessionForm
          canopy={canopy}
          onCreated={(info) => {
            setSessions((list) => [info, ...(list ?? []).filter((s) => s.id !== info.id)]);
            setPanel(null);
            location.hash = sessionHref(info.id);
          }}
        />
        <h2>Sessions</h2>
        {error && <p className="error">{error}</p>}
        <SessionList
          sessions={sessions}
          currentId={sessionId}
          onRename={rename}
          onDelete={remove}
          onOpen={() => setPanel(null)}
        />
      </aside>
      <button
        type="button"
        className="panel-scrim"
        aria-label="Close the panel"
        tabIndex={-1}
        onClick={() => setPanel(null)}
      />
      {session ? (
        <ChatPanel
          key={`${session.id}:${observe ? 'observe' : 'control'}`}
          session={session}
          observe={observe}
          panel={panel}
          onPanel={setPanel}
          onTitle={(title) =>
            setSessions((list) => list && list.map((s) => (s.id === session.id ? { ...s, title } : s)))
          }
        />
      ) : (
        <section className="empty" data-testid="no-session">
          <div>
            <p>
              Start a chat: pick a model in <strong>New session</strong> and press <strong>Create</strong> (
              <kbd>Ctrl</kbd>+<kbd>Shift</kbd>+<kbd>O</kbd>), or open one of your sessions.
            </p>
            <button
              type="button"
              className="panel-toggle primary"
              onClick={() => setPanel('sessions')}
              data-testid="toggle-sessions"
            >
              Sessions and new chat
            </button>
          </div>
        </section>
      )}
    </main>
  );
}
