// The sessions of the playground's sidebar: searched by title, renamed in place (Enter saves, Escape cancels),
// deleted after a confirmation, and an empty state that says how to start.

import { useState } from 'react';
import type { SessionInfo } from '@canopy/client';
import { sessionHref } from './route';

export interface SessionListProps {
  sessions: SessionInfo[] | null;
  currentId: string | null;
  onRename: (id: string, title: string) => Promise<boolean>;
  onDelete: (id: string) => Promise<boolean>;
  /** Called when a session is opened (the phone layout closes the panel). */
  onOpen: () => void;
}

export function SessionList({ sessions, currentId, onRename, onDelete, onOpen }: SessionListProps) {
  const [query, setQuery] = useState('');
  const [renaming, setRenaming] = useState<{ id: string; title: string } | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);

  if (sessions === null) return <p className="muted">Loading…</p>;
  if (sessions.length === 0) {
    return (
      <p className="muted" data-testid="sessions-empty">
        No sessions yet. Pick a model above and press <strong>Create</strong>: <code>mock:echo</code> answers
        at once, <code>mock:script</code> plays a scripted demo with tools to approve.
      </p>
    );
  }
  const needle = query.trim().toLowerCase();
  const shown = needle ? sessions.filter((s) => (s.title ?? s.id).toLowerCase().includes(needle)) : sessions;

  return (
    <>
      <input
        type="search"
        className="session-search"
        placeholder="Search by title"
        aria-label="Search sessions by title"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
        data-testid="session-search"
      />
      {shown.length === 0 && (
        <p className="muted" data-testid="sessions-no-match">
          No session title contains “{query.trim()}”.
        </p>
      )}
      <ul className="session-list" data-testid="session-list">
        {shown.map((s) => {
          const name = s.title ?? s.id;
          if (renaming?.id === s.id) {
            return (
              <li key={s.id} className={s.id === currentId ? 'current' : ''}>
                <form
                  onSubmit={(e) => {
                    e.preventDefault();
                    const title = renaming.title.trim();
                    if (!title) return;
                    void onRename(s.id, title).then((ok) => ok && setRenaming(null));
                  }}
                >
                  <input
                    value={renaming.title}
                    aria-label="New title"
                    autoFocus
                    onChange={(e) => setRenaming({ id: s.id, title: e.target.value })}
                    onKeyDown={(e) => {
                      if (e.key === 'Escape') setRenaming(null);
                    }}
                    data-testid="rename-input"
                  />
                  <button type="submit" data-testid="rename-save">
                    Save
                  </button>
                  <button type="button" onClick={() => setRenaming(null)}>
                    Cancel
                  </button>
                </form>
              </li>
            );
          }
          if (deleting === s.id) {
            return (
              <li key={s.id} className={s.id === currentId ? 'current' : ''}>
                <div
                  className="confirm"
                  role="alertdialog"
                  aria-label="Confirm deletion"
                  data-testid="delete-confirm"
                >
                  <span>Delete “{name}” and its whole tree? This cannot be undone.</span>
                  <button
                    type="button"
                    className="danger"
                    autoFocus
                    onClick={() => void onDelete(s.id).then(() => setDeleting(null))}
                    data-testid="delete-yes"
                  >
                    Delete
                  </button>
                  <button type="button" onClick={() => setDeleting(null)} data-testid="delete-no">
                    Keep
                  </button>
                </div>
              </li>
            );
          }
          return (
            <li key={s.id} className={s.id === currentId ? 'current' : ''}>
              <a
                href={sessionHref(s.id)}
                onClick={onOpen}
                aria-current={s.id === currentId ? 'page' : undefined}
                data-testid="session-item"
                data-session-id={s.id}
              >
                <span className="title">{name}</span>
                <span className="meta">
                  {s.model} · <span className={`status status-${s.status}`}>{s.status}</span>
                </span>
              </a>
              <button
                type="button"
                className="icon"
                aria-label={`Rename ${name}`}
                title="Rename"
                onClick={() => setRenaming({ id: s.id, title: s.title ?? '' })}
                data-testid="rename"
              >
                ✎
              </button>
              <button
                type="button"
                className="icon"
                aria-label={`Delete ${name}`}
                title="Delete"
                onClick={() => setDeleting(s.id)}
                data-testid="delete"
              >
                ✕
              </button>
            </li>
          );
        })}
      </ul>
    </>
  );
}
