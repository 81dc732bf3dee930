// One session in the playground: its live turns with their branch pickers and actions, decisions on paused tool
// calls, the prompt box, and the tree of every message beside them.

import { useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import type { Decision, NodeId, Session } from '@canopy/client';
import { errorText } from './format';
import { useSessionLive } from './session-live';
import { TreePanel } from './tree-panel';
import { TurnView } from './turn-view';

export function ChatPanel({ session }: { session: Session }) {
  const { view, tree, progress, failure } = useSessionLive(session);
  const [draft, setDraft] = useState('');
  const [sending, setSending] = useState(false);
  const [commandError, setCommandError] = useState<string | null>(null);
  const bottom = useRef<HTMLDivElement>(null);

  const status = view?.session.status ?? 'idle';
  const idle = view !== null && status === 'idle' && !sending;

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

  // Follow the conversation as it streams, unless the reader scrolled up.
  useEffect(() => {
    const el = bottom.current;
    const list = el?.parentElement;
    if (el && list && list.scrollHeight - list.scrollTop - list.clientHeight < 160) el.scrollIntoView();
  }, [view]);

  const send = async (e?: FormEvent) => {
    e?.preventDefault();
    const text = draft.trim();
    if (!text || !idle) return;
    if (await command(() => session.prompt(text))) setDraft('');
  };

  return (
    <>
      <section className="chat" data-testid="chat" data-session-id={session.id}>
        <header className="chat-head">
          <div>
            <h2 data-testid="session-title">{view?.session.title ?? session.id}</h2>
            <span className="muted">
              {view?.session.model} · <code>{session.id}</code>
            </span>
          </div>
          <span className={`status status-${status}`} data-testid="session-status">
            {view ? status : 'connecting'}
          </span>
          {status === 'busy' && (
            <button type="button" onClick={() => void command(() => session.cancel())} data-testid="cancel">
              Cancel
            </button>
          )}
        </header>
        {failure && (
          <p className="error" data-testid="stream-error">
            {failure}
          </p>
        )}
        <div className="turns" data-testid="turns">
          {view?.turns.length === 0 && <p className="muted">No messages yet: say something.</p>}
          {view?.turns.map((turn, i) => (
            <TurnView
              key={turn.id ?? `in-flight-${i}`}
              turn={turn}
              idle={idle}
              editTarget={editTarget(turn.id)}
              progress={progress}
              awaiting={awaiting}
              clientTools={clientTools}
              onNavigate={(id) => void command(() => session.navigate(id))}
              onRegenerate={(id) => void command(() => session.regenerate(id))}
              onEdit={(target, text) => command(() => session.edit(target, text))}
              onDecide={decide}
            />
          ))}
          {view?.error && (
            <p className="error" data-testid="run-error">
              Run failed: {view.error.code}: {view.error.message}
            </p>
          )}
          <div ref={bottom} />
        </div>
        {commandError && (
          <p className="error" data-testid="command-error">
            {commandError}
          </p>
        )}
        <form className="composer" onSubmit={(e) => void send(e)}>
          <textarea
            rows={2}
            value={draft}
            placeholder={
              status === 'paused' ? 'Waiting for a decision on a tool call…' : 'Message (Enter to send)'
            }
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey) {
                e.preventDefault();
                void send();
              }
            }}
            data-testid="prompt-input"
          />
          <button type="submit" disabled={!idle || !draft.trim()} data-testid="send">
            Send
          </button>
        </form>
      </section>
      <TreePanel
        tree={tree}
        idle={idle}
        running={status !== 'idle'}
        onNavigate={(id) => void command(() => session.navigate(id))}
      />
    </>
  );
}
