// Search across conversations: the words typed in the sidebar's search box, looked up in every message
// (GET /v1/sessions/search, Postgres full-text search: words, "quoted phrases", or, -word). Each hit names its
// session and shows the best matching message with the matched words marked; it links to that message
// (`#/sessions/<id>/messages/<n>`). Asked a moment after typing stops; older answers are dropped.

import { useEffect, useState, type ReactNode } from 'react';
import type { Canopy, SearchHit } from '@canopy/client';
import { errorText, plural } from './format';
import { messageHref } from './route';

const DEBOUNCE_MS = 250;
const PAGE = 20;

type State =
  | { kind: 'idle' }
  | { kind: 'loading' }
  | { kind: 'error'; message: string }
  | { kind: 'done'; hits: SearchHit[]; nextCursor: string | null; more: boolean };

/** The snippet's text with its highlights as <mark>, escaped by React (the offsets are [start, end)). */
export function Snippet({ text, highlights }: { text: string; highlights: Array<[number, number]> }) {
  const parts: ReactNode[] = [];
  let at = 0;
  for (const [i, [start, end]] of [...highlights].sort((a, b) => a[0] - b[0]).entries()) {
    if (start < at || end <= start) continue;
    if (start > at) parts.push(<span key={`t${i}`}>{text.slice(at, start)}</span>);
    parts.push(<mark key={`m${i}`}>{text.slice(start, end)}</mark>);
    at = end;
  }
  if (at < text.length) parts.push(<span key="rest">{text.slice(at)}</span>);
  return <>{parts}</>;
}

export function MessageSearch({
  canopy,
  query,
  onOpen,
}: {
  canopy: Canopy;
  query: string;
  /** Called when a hit is opened (the phone layout closes the panel). */
  onOpen: () => void;
}) {
  const [state, setState] = useState<State>({ kind: 'idle' });
  const q = query.trim();

  useEffect(() => {
    if (!q) {
      setState({ kind: 'idle' });
      return;
    }
    let current = true;
    setState({ kind: 'loading' });
    const timer = setTimeout(() => {
      canopy.sessions.search(q, { limit: PAGE }).then(
        (page) =>
          current && setState({ kind: 'done', hits: page.data, nextCursor: page.nextCursor, more: false }),
        (err: unknown) => current && setState({ kind: 'error', message: errorText(err) }),
      );
    }, DEBOUNCE_MS);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [canopy, q]);

  const loadMore = (cursor: string) => {
    if (state.kind !== 'done') return;
    setState({ ...state, more: true });
    canopy.sessions.search(q, { limit: PAGE, cursor }).then(
      (page) =>
        setState({
          kind: 'done',
          hits: [...state.hits, ...page.data],
          nextCursor: page.nextCursor,
          more: false,
        }),
      (err: unknown) => setState({ kind: 'error', message: errorText(err) }),
    );
  };

  if (state.kind === 'idle') return null;
  return (
    <section
      className="message-search"
      aria-label="Messages matching the search"
      data-testid="message-search"
    >
      <h3>In messages</h3>
      {state.kind === 'loading' && (
        <p className="muted" role="status" data-testid="search-loading">
          Searching messages…
        </p>
      )}
      {state.kind === 'error' && (
        <p className="error" role="alert" data-testid="search-error">
          Search failed: {state.message}
        </p>
      )}
      {state.kind === 'done' && state.hits.length === 0 && (
        <p className="muted" role="status" data-testid="search-empty">
          No message matches “{q}”. Search finds whole words; use "quoted phrases", or, and -word.
        </p>
      )}
      {state.kind === 'done' && state.hits.length > 0 && (
        <>
          <p className="visually-hidden" role="status">
            {plural(state.hits.length, 'conversation')} found
          </p>
          <ul className="search-hits" data-testid="search-hits">
            {state.hits.map((hit) => (
              <li key={hit.session.id}>
                <a
                  href={messageHref(hit.session.id, hit.snippet.nodeId)}
                  onClick={onOpen}
                  data-testid="search-hit"
                  data-session-id={hit.session.id}
                  data-node-id={hit.snippet.nodeId}
                >
                  <span className="title">
                    {hit.session.pinned && (
                      <>
                        <span aria-hidden="true">★ </span>
                        <span className="visually-hidden">pinned: </span>
                      </>
                    )}
                    {hit.session.title ?? hit.session.id}
                  </span>
                  <span className="snippet" data-testid="search-snippet">
                    <Snippet text={hit.snippet.text} highlights={hit.snippet.highlights} />
                  </span>
                  <span className="meta">
                    message #{hit.snippet.nodeId}
                    {hit.matches > 1 ? ` · ${plural(hit.matches, 'matching message')}` : ''}
                  </span>
                </a>
              </li>
            ))}
          </ul>
          {state.nextCursor && (
            <button
              type="button"
              className="link"
              disabled={state.more}
              onClick={() => state.nextCursor && loadMore(state.nextCursor)}
              data-testid="search-more"
            >
              {state.more ? 'Loading…' : 'More results'}
            </button>
          )}
        </>
      )}
    </section>
  );
}
