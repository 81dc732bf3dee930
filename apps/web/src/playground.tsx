// The playground: the tenant's sessions (pinned first, kept current from the activity feed: each session's status
// and title as they change, the list itself fetched again for what the feed does not carry) with a form to create
// one, a search over titles and message text, an import from a file, and the chosen session's chat and its tree.
// Below 900 px wide the sessions and the tree are panels over the chat, opened by toggles. Ctrl+Shift+O (⌘⇧O)
// starts a new chat with the form's settings.

import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { ActivityEvent, Canopy, SessionInfo, SessionStatus } from '@canopy/client';
import { ChatPanel, type Panel } from './chat-panel';
import { errorText } from './format';
import { ImportPanel } from './import-panel';
import { MessageSearch } from './message-search';
import { NewSessionForm } from './new-session-form';
import { sessionHref } from './route';
import { SessionList } from './session-list';

/** How often a user token's session list is fetched again (it has no activity feed to follow). */
const POLL_MS = 5_000;
const LIST_LIMIT = 100;

/** What the activity feed said of a session, and when (performance.now()). */
interface Announced {
  status?: SessionStatus;
  title?: string | null;
  at: number;
}

/**
 * A listing with what the feed announced after the listing was asked for (`since`) laid over it: an answer that left
 * the server before a change must not take the change back.
 */
export function withAnnounced(
  list: SessionInfo[],
  announced: ReadonlyMap<string, Announced>,
  since: number,
): SessionInfo[] {
  return list.map((s) => {
    const a = announced.get(s.id);
    if (!a || a.at < since) return s;
    return {
      ...s,
      ...(a.status !== undefined ? { status: a.status } : {}),
      ...(a.title !== undefined ? { title: a.title } : {}),
    };
  });
}

/** What an activity event changes in a listed session (null: nothing a listing shows). */
function changeOf(event: ActivityEvent): Omit<Announced, 'at'> | null {
  switch (event.type) {
    case 'opened':
      return { status: event.data.status, title: event.data.title };
    case 'status':
      return { status: event.data.status };
    case 'title':
      return { title: event.data.title };
    default:
      return null;
  }
}

/** Pinned sessions first, each group in the order given (most recently updated first). */
export function pinnedFirst(list: SessionInfo[]): SessionInfo[] {
  return [...list.filter((s) => s.pinned), ...list.filter((s) => !s.pinned)];
}

export function Playground({
  canopy,
  sessionId,
  nodeId,
  observe,
  followActivity,
  userToken = false,
}: {
  canopy: Canopy;
  sessionId: string | null;
  /** A message of the session to show (a search hit's). */
  nodeId: number | null;
  /** Watch the session read-only, as an observer. */
  observe: boolean;
  /** Keep the list current from the tenant's activity feed (API keys); false polls it (user tokens). */
  followActivity: boolean;
  /** Signed in with a user token. */
  userToken?: boolean;
}) {
  const [sessions, setSessions] = useState<SessionInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [panel, setPanel] = useState<Panel>(null);
  const [query, setQuery] = useState('');
  const [importing, setImporting] = useState(false);

  /** The feed's latest word on each session (a listing asked for before it does not undo it). */
  const announced = useRef(new Map<string, Announced>());
  const announce = useCallback((id: string, change: Omit<Announced, 'at'>) => {
    announced.current.set(id, { ...announced.current.get(id), ...change, at: performance.now() });
    setSessions(
      (list) =>
        list &&
        list.map((s) =>
          s.id === id
            ? {
                ...s,
                ...(change.status !== undefined ? { status: change.status } : {}),
                ...(change.title !== undefined ? { title: change.title } : {}),
              }
            : s,
        ),
    );
  }, []);

  const refresh = useCallback(async () => {
    const since = performance.now();
    try {
      // The pinned ones are asked for on their own, so they are all there however many others there are.
      const [pinned, others] = await Promise.all([
        canopy.sessions.list({ pinned: true, limit: LIST_LIMIT }),
        canopy.sessions.list({ pinned: false, limit: LIST_LIMIT }),
      ]);
      setSessions(withAnnounced([...pinned.data, ...others.data], announced.current, since));
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
          for await (const event of canopy.activity({ signal: controller.signal })) {
            // A status or title shows at once; the listing is fetched again for the rest (new sessions, order).
            const change = changeOf(event);
            if (change) announce(event.data.id, change);
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
  }, [canopy, refresh, followActivity, announce]);

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

  /** A session made here (created, forked, imported): listed at once, and opened. */
  const opened = (info: SessionInfo) => {
    setSessions((list) => pinnedFirst([info, ...(list ?? []).filter((s) => s.id !== info.id)]));
    setPanel(null);
    location.hash = sessionHref(info.id);
  };
  const replaced = (updated: SessionInfo) =>
    setSessions((list) => pinnedFirst((list ?? []).map((s) => (s.id === updated.id ? updated : s))));

  const rename = async (id: string, title: string) => {
    try {
      replaced(await canopy.session(id).update({ title }));
      return true;
    } catch (err) {
      setError(errorText(err));
      return false;
    }
  };
  const pin = async (id: string, pinned: boolean) => {
    try {
      replaced(await canopy.session(id).pin(pinned));
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
  const removeMany = async (ids: string[]) => {
    try {
      const result = await canopy.sessions.deleteMany({ ids });
      const gone = new Set(result.ids);
      setSessions((list) => (list ?? []).filter((s) => !gone.has(s.id)));
      if (sessionId && gone.has(sessionId)) location.hash = '#/';
      setError(null);
      return result.deleted;
    } catch (err) {
      setError(`Nothing was deleted: ${errorText(err)}`);
      return null;
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
        {/* An API key (followActivity) may list the tenant's MCP servers; a user token may not. */}
        <NewSessionForm canopy={canopy} onCreated={opened} mcpServers={followActivity} />
        <div className="sessions-head">
          <h2>Sessions</h2>
          <button
            type="button"
            className="link"
            aria-expanded={importing}
            onClick={() => setImporting(!importing)}
            data-testid="import-toggle"
          >
            Import…
          </button>
        </div>
        {importing && (
          <ImportPanel
            canopy={canopy}
            onImported={opened}
            onImportedMany={() => void refresh()}
            onClose={() => setImporting(false)}
          />
        )}
        <input
          type="search"
          className="session-search"
          placeholder="Search titles and messages"
          aria-label="Search sessions by title and message text"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
          data-testid="session-search"
        />
        {error && (
          <p className="error" role="alert" data-testid="sessions-error">
            {sessions === null ? `The sessions could not be loaded: ${error}` : error}{' '}
            {sessions === null && (
              <button type="button" onClick={() => void refresh()} data-testid="sessions-retry">
                Retry
              </button>
            )}
          </p>
        )}
        {!(error && sessions === null) && (
          <SessionList
            sessions={sessions}
            query={query}
            currentId={sessionId}
            onRename={rename}
            onDelete={remove}
            onPin={pin}
            onDeleteMany={removeMany}
            onOpen={() => setPanel(null)}
          />
        )}
        <MessageSearch canopy={canopy} query={query} onOpen={() => setPanel(null)} />
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
          focusNode={nodeId}
          panel={panel}
          onPanel={setPanel}
          onForked={opened}
          userToken={userToken}
          onRevokeShare={(id) => canopy.shares.revoke(id)}
          files={canopy.files}
          onStatus={(status) => announce(session.id, { status })}
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
