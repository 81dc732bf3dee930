// One session in the playground: its live turns with their branch pickers and actions, decisions on paused tool
// calls, a cancelled or failed run kept on screen (Retry / Edit), the composer, and the tree beside them.
// Keyboard: Enter sends, Shift+Enter adds a line, Escape stops a run. Watching (`observe`) is read-only: an
// observer's stream, no composer, no actions. An unknown session says so and stops there. A session opened at
// one of its messages (a search hit) scrolls to it and marks it, or offers to switch to its branch. Any reply can be
// forked into a new session (the path up to it), and the session exported to a file. A chat opens at its latest
// turn; a long one's earlier turns load a page at a time as the reader scrolls to the top, the place kept. Files are
// attached by the composer's button, a paste or a drop (uploaded at once, sent with the prompt by id).

import { useEffect, useLayoutEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import {
  turnText,
  type Canopy,
  type Decision,
  type FeedbackView,
  type NodeId,
  type Session,
  type SessionInfo,
  type Turn,
} from '@canopy/client';
import { AttachmentTray, FilesContext, useAttachments } from './attachments';
import { ExportMenu } from './export-menu';
import { FeedbackBar } from './feedback-bar';
import { errorText } from './format';
import { useSessionLive } from './session-live';
import { TokenMeter } from './token-meter';
import { ShareButton } from './share-button';
import { TreePanel } from './tree-panel';
import { TurnView } from './turn-view';

export type Panel = 'sessions' | 'tree' | null;

/** How near the top of the chat (px) scrolling asks for the page of earlier turns. */
const EARLIER_EDGE_PX = 200;

/** For each node of the active path, the turn (its first node's id) it belongs to; and each turn's last node. */
export function turnsOfPath(
  path: readonly NodeId[],
  turnIds: ReadonlySet<NodeId>,
): { turnOf: Map<NodeId, NodeId>; lastOf: Map<NodeId, NodeId> } {
  const turnOf = new Map<NodeId, NodeId>();
  const lastOf = new Map<NodeId, NodeId>();
  let current: NodeId | null = null;
  for (const id of path) {
    if (turnIds.has(id)) current = id;
    if (current === null) continue;
    turnOf.set(id, current);
    lastOf.set(current, id);
  }
  return { turnOf, lastOf };
}

export function ChatPanel({
  session,
  observe,
  focusNode,
  panel,
  onPanel,
  onForked,
  onTitle,
  userToken = false,
  onRevokeShare,
  onStatus,
  files = null,
}: {
  session: Session;
  /** The files API: attachments are uploaded through it and shown from it (null: none can be attached). */
  files?: Canopy['files'] | null;
  observe: boolean;
  /** A message to scroll to and mark (a search hit's), or null. */
  focusNode: number | null;
  panel: Panel;
  onPanel: (panel: Panel) => void;
  /** A fork was made: the page lists and opens it. */
  onForked: (info: SessionInfo) => void;
  onTitle: (title: string | null) => void;
  /** Signed in with a user token (its ratings are all its own; a key's own are those for no user). */
  userToken?: boolean;
  /** Revokes a share link made here. */
  onRevokeShare?: (shareId: string) => Promise<void>;
  /** The session's status as its live view sees it (the page's list shows the same). */
  onStatus?: (status: 'idle' | 'busy' | 'paused') => void;
}) {
  const { view, tree, progress, failure, notFound, earlier, loadEarlier } = useSessionLive(
    session,
    observe ? 'observer' : 'controller',
  );
  const [draft, setDraft] = useState('');
  const attachments = useAttachments(files);
  const [dragging, setDragging] = useState(false);
  const picker = useRef<HTMLInputElement>(null);
  const [sending, setSending] = useState(false);
  const [forking, setForking] = useState<NodeId | null>(null);
  const [commandError, setCommandError] = useState<string | null>(null);
  const [editRequest, setEditRequest] = useState<{ id: NodeId; n: number } | null>(null);
  const [dismissed, setDismissed] = useState<string | null>(null);
  const bottom = useRef<HTMLDivElement>(null);
  const list = useRef<HTMLDivElement>(null);
  /** The session the chat was last opened at (scrolled to its end once its first view came). */
  const opened = useRef<string | null>(null);
  /** Where the reader was when a page of earlier turns was asked for, to keep the place once it lands above. */
  const anchor = useRef<{ height: number; top: number; firstId: NodeId | null | undefined } | null>(null);
  const composer = useRef<HTMLTextAreaElement>(null);

  /** The caller's own ratings of this session's replies, by reply node. */
  const [ratings, setRatings] = useState<Map<NodeId, FeedbackView>>(() => new Map());
  useEffect(() => {
    if (observe) return;
    let cancelled = false;
    session.ratings().then(
      (list) =>
        !cancelled &&
        setRatings(new Map(list.filter((r) => userToken || r.userId === null).map((r) => [r.nodeId, r]))),
      // Without them the thumbs start unpressed; rating still works.
      () => undefined,
    );
    return () => {
      cancelled = true;
    };
  }, [session, observe, userToken]);

  const status = view?.session.status ?? 'idle';
  const readOnly = observe || notFound;
  const idle = view !== null && status === 'idle' && !sending && !readOnly;
  const title = view?.session.title ?? null;

  useEffect(() => {
    if (view && !notFound) onStatus?.(status);
    // Only when the status itself changes.
  }, [status, view === null]);

  useEffect(() => {
    if (view) onTitle(title);
    // Only when the title itself changes.
  }, [title]);

  /** Sends a command; its effects arrive as events, so only a refusal needs showing here. */
  const command = async (send: () => Promise<unknown>): Promise<boolean> => {
    setSending(true);
    setCommandError(null);
    try {
      await send();
      return true;
    } catch (err) {
      setCommandError(errorText(err));
      return false;
    } finally {
      setSending(false);
    }
  };
  const stop = () => void command(() => session.cancel());

  // Escape stops a run in flight (an open edit box takes Escape for itself).
  useEffect(() => {
    if (readOnly || status !== 'busy') return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape' && !e.defaultPrevented) stop();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [readOnly, status, session]);

  const nodes = useMemo(() => new Map((tree?.nodes ?? []).map((n) => [n.id, n])), [tree]);
  /** Where an edit of the prompt `userNodeId` branches from: the assistant node before it, or null for a root. */
  const editTarget = (userNodeId: NodeId | null): NodeId | null | undefined => {
    if (userNodeId === null) return undefined;
    const node = nodes.get(userNodeId);
    if (!node) return undefined;
    if (node.parentId === null) return null;
    return nodes.get(node.parentId)?.message.role === 'assistant' ? node.parentId : undefined;
  };

  const awaiting = useMemo(() => new Set((view?.awaiting ?? []).map((t) => t.id)), [view]);
  const clientTools = useMemo(() => new Set((view?.session.tools ?? []).map((t) => t.name)), [view]);
  const decide = (toolUseId: string, decision: Decision) =>
    void command(() => session.resume(decision, toolUseId));

  // Open at the latest turn (unless a message was asked for); then follow the conversation as it streams, unless
  // the reader scrolled up.
  useEffect(() => {
    const el = bottom.current;
    const turnList = list.current;
    if (!el || !turnList || !view) return;
    if (opened.current !== session.id) {
      opened.current = session.id;
      if (focusNode === null) el.scrollIntoView({ block: 'end' });
      return;
    }
    if (turnList.scrollHeight - turnList.scrollTop - turnList.clientHeight < 160) el.scrollIntoView();
  }, [view]);

  /** Asks for the page of earlier turns, remembering where the reader is. */
  const earlierPage = () => {
    const turnList = list.current;
    if (!turnList || !view?.hasEarlier || earlier.loading) return;
    anchor.current = {
      height: turnList.scrollHeight,
      top: turnList.scrollTop,
      firstId: view.turns[0]?.id,
    };
    loadEarlier();
  };
  const onScroll = () => {
    if (earlier.error) return; // a failed page waits for Retry
    if ((list.current?.scrollTop ?? Infinity) < EARLIER_EDGE_PX) earlierPage();
  };
  // A page landed above: the turns the reader was looking at stay where they were. A chat too short to scroll reads
  // earlier pages until it fills (or there are none).
  useLayoutEffect(() => {
    const turnList = list.current;
    if (!turnList || !view) return;
    const at = anchor.current;
    if (at && view.turns[0]?.id !== at.firstId) {
      turnList.scrollTop = at.top + (turnList.scrollHeight - at.height);
      anchor.current = null;
    }
    if (view.hasEarlier && !earlier.error && turnList.scrollHeight <= turnList.clientHeight) earlierPage();
  }, [view]);
  useEffect(() => {
    if (!earlier.loading) anchor.current = null;
  }, [earlier.loading]);
  const earlierState = earlier.loading
    ? 'loading'
    : earlier.error
      ? 'error'
      : view?.hasEarlier
        ? 'more'
        : 'start';

  const send = async (e?: FormEvent) => {
    e?.preventDefault();
    const text = draft.trim();
    if ((!text && attachments.blocks.length === 0) || !idle || attachments.uploading) return;
    const content =
      attachments.blocks.length === 0
        ? text
        : [...(text ? [{ type: 'text' as const, text }] : []), ...attachments.blocks];
    // The draft stays in the box until the prompt is accepted: a refusal loses nothing.
    if (await command(() => session.prompt(content))) {
      setDraft('');
      attachments.clear();
    }
  };

  const interrupted = view?.interrupted && view.interrupted.runId !== dismissed ? view.interrupted : null;
  const retry = (turn: Turn) =>
    void command(() =>
      turn.id === null ? session.prompt(turnText(turn, 'user')) : session.regenerate(turn.id),
    );
  const editInterrupted = (turn: Turn) => {
    if (turn.id === null) {
      setDraft(turnText(turn, 'user'));
      composer.current?.focus();
    } else setEditRequest({ id: turn.id, n: Date.now() });
  };
  const turns = view?.turns ?? [];

  const { turnOf, lastOf } = useMemo(
    () => turnsOfPath(tree?.path ?? [], new Set(turns.flatMap((t) => (t.id === null ? [] : [t.id])))),
    [tree, turns],
  );
  /** Forks the path up to `nodeId` into a new session, which the page opens. */
  const forkAt = (nodeId: NodeId) => {
    setForking(nodeId);
    void command(async () => {
      const { info } = await session.fork({
        nodeId,
        title: `${title ?? 'Untitled session'} (fork)`,
      });
      onForked(info);
    }).finally(() => setForking(null));
  };
  /** A turn forks at its last message on the active path (the whole reply). */
  const fork = (turnId: NodeId) => forkAt(lastOf.get(turnId) ?? turnId);

  // A message asked for by the address: where it is on the active path, its turn; else why not.
  const focusTurn = focusNode !== null ? (turnOf.get(focusNode) ?? null) : null;
  const focusState: 'none' | 'loading' | 'on-path' | 'off-path' | 'missing' =
    focusNode === null
      ? 'none'
      : !tree
        ? 'loading'
        : focusTurn !== null
          ? 'on-path'
          : nodes.has(focusNode)
            ? 'off-path'
            : 'missing';
  const scrolledTo = useRef<string | null>(null);
  useEffect(() => {
    if (focusState !== 'on-path' || focusTurn === null) return;
    const key = `${focusNode}:${focusTurn}`;
    if (scrolledTo.current === key) return;
    const el = document.querySelector(`[data-testid="turn"][data-turn-id="${focusTurn}"]`);
    if (!el) return;
    scrolledTo.current = key;
    el.scrollIntoView({ block: 'center' });
  }, [focusState, focusTurn, focusNode, turns]);

  return (
    <FilesContext.Provider value={files}>
      <section className="chat" data-testid="chat" data-session-id={session.id} aria-label="Chat">
        <header className="chat-head">
          <button
            type="button"
            className="panel-toggle"
            aria-expanded={panel === 'sessions'}
            onClick={() => onPanel(panel === 'sessions' ? null : 'sessions')}
            data-testid="toggle-sessions"
          >
            Sessions
          </button>
          <div className="chat-title">
            <h2 data-testid="session-title">
              {notFound ? 'Session not found' : (title ?? 'Untitled session')}
            </h2>
            <span className="chat-sub">
              {view?.session.model ?? '…'} · <code>{session.id}</code>
            </span>
            {!notFound && (
              <TokenMeter loading={!view} context={view?.session.context} lastError={view?.error?.code} />
            )}
          </div>
          <span
            className={`status status-${notFound ? 'missing' : status}`}
            role="status"
            data-testid="session-status"
          >
            {notFound ? 'not found' : view ? status : 'connecting'}
          </span>
          {!notFound && <ExportMenu session={session} title={title} />}
          {!notFound && !observe && onRevokeShare && (
            <ShareButton session={session} onRevoke={onRevokeShare} />
          )}
          {status === 'busy' && !readOnly && (
            <button
              type="button"
              onClick={stop}
              aria-keyshortcuts="Escape"
              title="Stop (Esc)"
              data-testid="cancel"
            >
              Stop
            </button>
          )}
          <button
            type="button"
            className="panel-toggle"
            aria-expanded={panel === 'tree'}
            onClick={() => onPanel(panel === 'tree' ? null : 'tree')}
            data-testid="toggle-tree"
          >
            Tree
          </button>
        </header>
        {observe && !notFound && (
          <p className="banner" data-testid="observer-banner">
            Watching as an observer: read-only.{' '}
            <a href={`#/sessions/${encodeURIComponent(session.id)}`}>Open it to chat</a>
          </p>
        )}
        {focusNode !== null && focusState !== 'none' && focusState !== 'loading' && !notFound && (
          <p className="banner" data-testid="focus-banner" data-focus={focusState}>
            {focusState === 'on-path' && <>Showing message #{focusNode}, the search match.</>}
            {focusState === 'off-path' && (
              <>
                Message #{focusNode} is on another branch of this conversation.{' '}
                <button
                  type="button"
                  className="link"
                  disabled={!idle}
                  onClick={() => void command(() => session.navigate(focusNode))}
                  data-testid="focus-switch"
                >
                  Switch to that branch
                </button>
              </>
            )}
            {focusState === 'missing' && <>This session has no message #{focusNode}.</>}{' '}
            <a href={`#/sessions/${encodeURIComponent(session.id)}`} data-testid="focus-clear">
              Clear
            </a>
          </p>
        )}
        {failure && (
          <p className="error banner" data-testid="stream-error">
            {failure}
          </p>
        )}
        <div className="turns" data-testid="turns" ref={list} onScroll={onScroll}>
          {view && (view.hasEarlier || earlier.loaded) && (
            <div className="earlier" data-testid="earlier" data-state={earlierState}>
              {earlierState === 'loading' && <span role="status">Loading earlier messages…</span>}
              {earlierState === 'error' && (
                <>
                  <span className="error" role="alert" data-testid="earlier-error">
                    Could not load earlier messages: {earlier.error}
                  </span>{' '}
                  <button type="button" onClick={earlierPage} data-testid="earlier-retry">
                    Retry
                  </button>
                </>
              )}
              {earlierState === 'more' && (
                <button type="button" className="link" onClick={earlierPage} data-testid="earlier-load">
                  Load earlier messages
                </button>
              )}
              {earlierState === 'start' && <span className="muted">The start of the conversation</span>}
            </div>
          )}
          {notFound ? (
            <div className="empty" data-testid="not-found">
              <p>
                There is no session <code>{session.id}</code> here: it was deleted, or it belongs to someone
                else. Pick one in <strong>Sessions</strong> or start a new one.
              </p>
            </div>
          ) : (
            view &&
            turns.length === 0 &&
            !interrupted && (
              <p className="muted" data-testid="no-turns">
                {readOnly ? 'No messages yet.' : 'No messages yet: write below and press Enter.'}
              </p>
            )
          )}
          {turns.map((turn, i) => (
            <TurnView
              key={turn.id ?? `in-flight-${i}`}
              turn={turn}
              idle={idle}
              readOnly={readOnly}
              laterTurns={turns.length - 1 - i}
              editTarget={editTarget(turn.id)}
              editRequest={editRequest && editRequest.id === turn.id ? editRequest.n : null}
              focused={
                turn.id !== null && turn.id === focusTurn
                  ? focusNode === turn.id
                    ? 'prompt'
                    : 'reply'
                  : null
              }
              onFork={turn.id !== null && !observe ? () => fork(turn.id!) : undefined}
              replyFooter={
                turn.resId !== null && !readOnly ? (
                  <FeedbackBar
                    rating={ratings.get(turn.resId) ?? null}
                    onRate={(rating, comment) => session.rate(turn.resId!, { rating, comment })}
                    onClear={() => session.unrate(turn.resId!)}
                  />
                ) : undefined
              }
              progress={progress}
              awaiting={awaiting}
              clientTools={clientTools}
              onNavigate={(id) => void command(() => session.navigate(id))}
              onRegenerate={(id) => void command(() => session.regenerate(id))}
              onEdit={(target, text) => command(() => session.edit(target, text))}
              onDecide={decide}
            />
          ))}
          {interrupted?.turns.map((turn, i) => (
            <div className="interrupted" key={`${interrupted.runId}-${i}`} data-testid="interrupted">
              <span className="label" data-testid="interrupted-label">
                {interrupted.status === 'cancelled'
                  ? 'Cancelled: this reply was stopped and not saved'
                  : `Failed: ${interrupted.error?.message ?? 'the run failed'} (nothing was saved)`}
              </span>
              <TurnView
                turn={turn}
                idle={false}
                readOnly
                laterTurns={0}
                editTarget={undefined}
                editRequest={null}
                progress={progress}
                awaiting={awaiting}
                clientTools={clientTools}
                onNavigate={() => undefined}
                onRegenerate={() => undefined}
                onEdit={() => Promise.resolve(false)}
                onDecide={() => undefined}
              />
              {!readOnly && (
                <div className="turn-actions">
                  <button type="button" disabled={!idle} onClick={() => retry(turn)} data-testid="retry">
                    Retry
                  </button>
                  <button
                    type="button"
                    disabled={!idle}
                    onClick={() => editInterrupted(turn)}
                    data-testid="edit-interrupted"
                  >
                    Edit
                  </button>
                  <button type="button" className="link" onClick={() => setDismissed(interrupted.runId)}>
                    Dismiss
                  </button>
                </div>
              )}
            </div>
          ))}
          {view?.error && !interrupted && view.error.code !== 'cancelled' && (
            <p className="error" data-testid="run-error">
              Run failed: {view.error.code}: {view.error.message}
            </p>
          )}
          <div ref={bottom} />
        </div>
        {forking !== null && (
          <p className="banner" role="status" data-testid="forking">
            Forking the conversation up to message #{forking}…
          </p>
        )}
        {commandError && (
          <p className="error banner" data-testid="command-error">
            {commandError}
          </p>
        )}
        {!observe && (
          <div className="composer-wrap">
            <AttachmentTray items={attachments.items} onRemove={attachments.remove} />
            <form
              className={`composer${dragging ? ' dragging' : ''}`}
              onSubmit={(e) => void send(e)}
              onDragOver={(e) => {
                if (!files || !e.dataTransfer.types.includes('Files')) return;
                e.preventDefault();
                setDragging(true);
              }}
              onDragLeave={() => setDragging(false)}
              onDrop={(e) => {
                setDragging(false);
                if (!files || e.dataTransfer.files.length === 0) return;
                e.preventDefault();
                attachments.add(e.dataTransfer.files);
              }}
              data-testid="composer"
            >
              {files && (
                <>
                  <button
                    type="button"
                    className="attach"
                    aria-label="Attach files"
                    title="Attach files (or paste, or drop them here)"
                    disabled={notFound}
                    onClick={() => picker.current?.click()}
                    data-testid="attach"
                  >
                    Attach
                  </button>
                  <input
                    ref={picker}
                    type="file"
                    multiple
                    hidden
                    onChange={(e) => {
                      if (e.target.files) attachments.add(e.target.files);
                      e.target.value = '';
                    }}
                    data-testid="attach-input"
                  />
                </>
              )}
              <textarea
                ref={composer}
                rows={2}
                value={draft}
                disabled={notFound}
                aria-label="Message"
                placeholder={
                  notFound
                    ? 'This session does not exist.'
                    : status === 'paused'
                      ? 'Waiting for a decision on a tool call…'
                      : 'Message (Enter to send, Shift+Enter for a new line)'
                }
                onChange={(e) => setDraft(e.target.value)}
                onPaste={(e) => {
                  if (!files || e.clipboardData.files.length === 0) return;
                  e.preventDefault();
                  attachments.add(e.clipboardData.files);
                }}
                onKeyDown={(e) => {
                  if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
                    e.preventDefault();
                    void send();
                  }
                }}
                data-testid="prompt-input"
              />
              <button
                type="submit"
                disabled={
                  !idle || attachments.uploading || (!draft.trim() && attachments.blocks.length === 0)
                }
                data-testid="send"
              >
                Send
              </button>
            </form>
            <p className="hint">
              <kbd>Enter</kbd> sends · <kbd>Shift</kbd>+<kbd>Enter</kbd> new line · <kbd>Esc</kbd> stops a run
              · <kbd>Ctrl</kbd>+<kbd>Shift</kbd>+<kbd>O</kbd> new chat
            </p>
          </div>
        )}
      </section>
      <TreePanel
        tree={tree}
        focusNode={focusNode}
        turns={turns}
        notFound={notFound}
        idle={idle}
        running={status !== 'idle'}
        onNavigate={(id) => void command(() => session.navigate(id))}
        {...(observe ? {} : { onFork: forkAt })}
        summarizedThrough={view?.session.context?.summarizedThrough ?? null}
        loadSummary={async () => (await session.context()).summary}
        onClose={() => onPanel(null)}
      />
    </FilesContext.Provider>
  );
}
