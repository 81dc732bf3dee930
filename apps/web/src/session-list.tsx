// The sessions of the playground's sidebar, pinned first: filtered by title as the search box is typed, pinned
// and unpinned (★), renamed in place (Enter saves, Escape cancels), deleted after a confirmation, and selected
// several at a time (Select: checkboxes, then one confirmation deletes them all). An empty state says how to start.

import { useEffect, useState } from 'react';
import type { SessionInfo } from '@canopy/client';
import { plural } from './format';
import { sessionHref } from './route';

export interface SessionListProps {
  sessions: SessionInfo[] | null;
  /** What the search box holds: titles containing it are shown. */
  query: string;
  currentId: string | null;
  onRename: (id: string, title: string) => Promise<boolean>;
  onDelete: (id: string) => Promise<boolean>;
  onPin: (id: string, pinned: boolean) => Promise<boolean>;
  /** Deletes these sessions; answers how many were deleted, or null when the call failed. */
  onDeleteMany: (ids: string[]) => Promise<number | null>;
  /** Called when a session is opened (the phone layout closes the panel). */
  onOpen: () => void;
}

export function SessionList(props: SessionListProps) {
  const { sessions, query, currentId, onRename, onDelete, onPin, onOpen } = props;
  const [renaming, setRenaming] = useState<{ id: string; title: string } | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const [selected, setSelected] = useState<Set<string> | null>(null);
  const [confirmMany, setConfirmMany] = useState(false);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);

  // What is selected and then goes away (deleted elsewhere) leaves the selection.
  useEffect(() => {
    if (!selected || !sessions) return;
    const ids = new Set(sessions.map((s) => s.id));
    if ([...selected].some((id) => !ids.has(id)))
      setSelected(new Set([...selected].filter((id) => ids.has(id))));
  }, [sessions]);

  if (sessions === null) {
    return (
      <p className="muted" role="status" data-testid="sessions-loading">
        Loading sessions…
      </p>
    );
  }
  if (sessions.length === 0) {
    return (
      <>
        {notice && (
          <p className="notice" role="status" data-testid="bulk-notice">
            {notice}
          </p>
        )}
        <p className="muted" data-testid="sessions-empty">
          No sessions yet. Pick a model above and press <strong>Create</strong>: <code>mock:echo</code>{' '}
          answers at once, <code>mock:script</code> plays a scripted demo with tools to approve. Or import a
          conversation.
        </p>
      </>
    );
  }
  const needle = query.trim().toLowerCase();
  const shown = needle ? sessions.filter((s) => (s.title ?? s.id).toLowerCase().includes(needle)) : sessions;
  const selecting = selected !== null;
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
    setConfirmMany(false);
  };
  const deleteSelected = async () => {
    if (!selected || selected.size === 0) return;
    setBusy(true);
    const deleted = await props.onDeleteMany([...selected]);
    setBusy(false);
    setConfirmMany(false);
    if (deleted !== null) {
      setSelected(null);
      setNotice(`Deleted ${plural(deleted, 'session')}.`);
    }
  };

  return (
    <>
      <div className="list-tools">
        {selecting ? (
          <div className="bulk-bar" role="group" aria-label="Selected sessions" data-testid="bulk-bar">
            <span data-testid="selected-count">{selected.size} selected</span>
            <button
              type="button"
              className="link"
              onClick={() => {
                setSelected(new Set(shown.map((s) => s.id)));
                setConfirmMany(false);
              }}
              data-testid="select-all"
            >
              Select all{needle ? ' shown' : ''}
            </button>
            <button
              type="button"
              className="danger"
              disabled={selected.size === 0 || busy}
              onClick={() => setConfirmMany(true)}
              data-testid="delete-selected"
            >
              Delete…
            </button>
            <button
              type="button"
              onClick={() => {
                setSelected(null);
                setConfirmMany(false);
              }}
              data-testid="select-done"
            >
              Done
            </button>
          </div>
        ) : (
          <button
            type="button"
            className="link"
            onClick={() => {
              setSelected(new Set());
              setNotice(null);
            }}
            data-testid="select-mode"
          >
            Select several
          </button>
        )}
      </div>
      {selecting && confirmMany && (
        <div className="confirm" role="alertdialog" aria-label="Confirm deletion" data-testid="bulk-confirm">
          <span>Delete {plural(selected.size, 'session')} and their whole trees? This cannot be undone.</span>
          <button
            type="button"
            className="danger"
            autoFocus
            disabled={busy}
            onClick={() => void deleteSelected()}
            data-testid="bulk-delete-yes"
          >
            {busy ? 'Deleting…' : `Delete ${selected.size}`}
          </button>
          <button type="button" onClick={() => setConfirmMany(false)} data-testid="bulk-delete-no">
            Keep
          </button>
        </div>
      )}
      {notice && (
        <p className="notice" role="status" data-testid="bulk-notice">
          {notice}
        </p>
      )}
      {shown.length === 0 && (
        <p className="muted" data-testid="sessions-no-match">
          No session title contains “{query.trim()}”.
        </p>
      )}
      <ul className="session-list" data-testid="session-list">
        {shown.map((s) => {
          const name = s.title ?? s.id;
          const rowClass = `${s.id === currentId ? 'current' : ''}${s.pinned ? ' pinned' : ''}`;
          if (renaming?.id === s.id) {
            return (
              <li key={s.id} className={rowClass}>
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
              <li key={s.id} className={rowClass}>
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
            <li key={s.id} className={rowClass} data-testid="session-row" data-pinned={s.pinned}>
              {selecting && (
                <input
                  type="checkbox"
                  className="select"
                  checked={selected.has(s.id)}
                  onChange={() => toggle(s.id)}
                  aria-label={`Select ${name}`}
                  data-testid="session-select"
                />
              )}
              <a
                href={sessionHref(s.id)}
                onClick={onOpen}
                aria-current={s.id === currentId ? 'page' : undefined}
                data-testid="session-item"
                data-session-id={s.id}
              >
                <span className="title">{name}</span>
                <span className="meta">
                  {s.pinned && <span className="pin-mark">pinned · </span>}
                  {s.model} · <span className={`status status-${s.status}`}>{s.status}</span>
                </span>
              </a>
              <button
                type="button"
                className={`icon pin${s.pinned ? ' on' : ''}`}
                aria-label={`Pin ${name}`}
                aria-pressed={s.pinned}
                title={s.pinned ? 'Unpin' : 'Pin (kept first, and kept by the retention policy)'}
                onClick={() => void onPin(s.id, !s.pinned)}
                data-testid="pin"
              >
                {s.pinned ? '★' : '☆'}
              </button>
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
