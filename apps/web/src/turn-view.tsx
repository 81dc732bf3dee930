// One turn of the conversation: the prompt (its versions, an edit box, copy) and the reply (Markdown text,
// thinking and tool calls; its versions, regenerate, copy), with each message's time — and the reply's tokens —
// shown on hover or focus. Regenerating or editing an earlier turn first says what happens to the later ones.

import { useEffect, useRef, useState, type ReactNode } from 'react';
import type { Decision, NodeId, Turn } from '@canopy/client';
import { turnText } from '@canopy/client';
import { AttachmentView } from './attachments';
import { CopyButton } from './copy-button';
import { dateTime, plural, tokens } from './format';
import { Markdown } from './markdown';
import { Picker } from './picker';
import { ToolCall } from './tool-call';

export interface TurnViewProps {
  turn: Turn;
  /** Commands may be sent (the session is idle and none is in flight). */
  idle: boolean;
  /** No actions at all (an observer, or a turn kept after its run was cancelled). */
  readOnly: boolean;
  /** How many turns follow this one on the active path. */
  laterTurns: number;
  /** The node an edit of this prompt branches from (null: a new root); undefined when it cannot be edited. */
  editTarget: NodeId | null | undefined;
  /** Changes when the page asks this turn to open its edit box. */
  editRequest: number | null;
  progress: Record<string, unknown[]>;
  awaiting: Set<string>;
  clientTools: Set<string>;
  onNavigate: (id: NodeId) => void;
  onRegenerate: (userNodeId: NodeId) => void;
  onEdit: (target: NodeId | null, text: string) => Promise<boolean>;
  onDecide: (toolUseId: string, decision: Decision) => void;
  /** The turn holds the message the page was opened at (a search hit): its prompt or its reply is marked. */
  focused?: 'prompt' | 'reply' | null;
  /** Forks the conversation up to the end of this turn into a new session; absent when it cannot be. */
  onFork?: () => void;
  /** Shown under the reply once it is complete (the thumbs and comment of feedback). */
  replyFooter?: ReactNode;
}

export function TurnView(props: TurnViewProps) {
  const { turn, idle, readOnly, editTarget, laterTurns } = props;
  const [editing, setEditing] = useState<string | null>(null);
  const [confirmRegenerate, setConfirmRegenerate] = useState(false);
  const streaming = turn.status === 'streaming';
  const prompt = turnText(turn, 'user');
  const reply = turnText(turn, 'assistant');
  const later =
    laterTurns === 1
      ? 'the later turn stays in the tree but leaves this conversation (‹ › brings it back)'
      : `the ${plural(laterTurns, 'later turn')} stay in the tree but leave this conversation (‹ › brings them back)`;

  const promptRef = useRef(prompt);
  promptRef.current = prompt;
  useEffect(() => {
    // Only when asked (a new request number), with the prompt as it is then.
    if (props.editRequest !== null) setEditing(promptRef.current);
  }, [props.editRequest]);

  const save = () => {
    if (editing === null || editTarget === undefined || !editing.trim() || !idle) return;
    void props.onEdit(editTarget, editing.trim()).then((ok) => ok && setEditing(null));
  };
  const regenerate = () => {
    setConfirmRegenerate(false);
    if (turn.id !== null) props.onRegenerate(turn.id);
  };

  return (
    <article
      className={`turn turn-${turn.status}${props.focused ? ` focused-${props.focused}` : ''}`}
      data-testid="turn"
      data-turn-id={turn.id ?? ''}
      data-focused={props.focused ?? undefined}
    >
      <div className="prompt">
        {editing === null ? (
          <div className="message">
            {prompt && (
              <div className="bubble user" data-testid="turn-prompt">
                {prompt}
              </div>
            )}
            {turn.userAttachments.length > 0 && (
              <div className="attachments" data-testid="turn-attachments">
                {turn.userAttachments.map((block, i) => (
                  <AttachmentView key={block.fileId ?? i} block={block} />
                ))}
              </div>
            )}
            <div className="message-meta">
              {turn.userTimestamp !== null && (
                <span className="details" data-testid="prompt-meta">
                  {dateTime(turn.userTimestamp)}
                </span>
              )}
              <CopyButton text={prompt} label="Copy prompt" testId="copy-prompt" />
              <Picker
                ids={turn.edits}
                current={turn.id}
                disabled={!idle}
                onPick={props.onNavigate}
                testId="prompt-picker"
                what="prompt"
              />
              {!readOnly && editTarget !== undefined && !streaming && (
                <button
                  type="button"
                  className="link"
                  disabled={!idle}
                  onClick={() => setEditing(prompt)}
                  data-testid="edit-prompt"
                >
                  Edit
                </button>
              )}
            </div>
          </div>
        ) : (
          <form
            className="edit"
            onSubmit={(e) => {
              e.preventDefault();
              save();
            }}
          >
            <textarea
              rows={3}
              value={editing}
              aria-label="Edit the prompt"
              onChange={(e) => setEditing(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
                  e.preventDefault();
                  save();
                } else if (e.key === 'Escape') {
                  // Cancels the edit, and nothing else (not a run's stop).
                  e.preventDefault();
                  e.stopPropagation();
                  setEditing(null);
                }
              }}
              data-testid="edit-input"
              autoFocus
            />
            {laterTurns > 0 && (
              <p className="hint" data-testid="edit-hint">
                Saving starts a new version of this prompt: {later}.
              </p>
            )}
            <div className="buttons">
              <button type="button" onClick={() => setEditing(null)} data-testid="edit-cancel">
                Cancel
              </button>
              <button type="submit" disabled={!idle || !editing.trim()} data-testid="edit-save">
                Save &amp; send
              </button>
            </div>
          </form>
        )}
      </div>
      <div className="reply" data-testid="turn-reply" data-res-id={turn.resId ?? ''}>
        <div className="message">
          {turn.content.map((block, i) => {
            if (block.type === 'text') {
              return (
                <div key={i} className="bubble assistant" data-testid="reply-text">
                  <Markdown text={block.text} />
                </div>
              );
            }
            if (block.type === 'thinking') {
              return (
                <details key={i} className="thinking">
                  <summary>Thinking</summary>
                  {block.text}
                </details>
              );
            }
            return (
              <ToolCall
                key={block.id}
                block={block}
                result={turn.toolResults[block.id] ?? null}
                progress={props.progress[block.id] ?? []}
                awaiting={props.awaiting.has(block.id) && !readOnly}
                clientTool={props.clientTools.has(block.name)}
                running={streaming}
                onDecide={(decision) => props.onDecide(block.id, decision)}
              />
            );
          })}
          {streaming && turn.content.length === 0 && (
            <div className="bubble assistant muted" data-testid="turn-streaming">
              …
            </div>
          )}
          {turn.error && turn.error !== 'cancelled' && <p className="error">{turn.error}</p>}
          {turn.interrupted && (
            <p className="muted interrupted-note" data-testid="turn-interrupted">
              Interrupted by a newer prompt: what it had done so far is kept.
            </p>
          )}
          {turn.content.length > 0 && (
            <div className="message-meta">
              {turn.timestamp !== null && (
                <span className="details" data-testid="reply-meta">
                  {dateTime(turn.timestamp)} · {tokens(turn.usage)}
                </span>
              )}
              {reply && <CopyButton text={reply} label="Copy reply" testId="copy-reply" />}
              {turn.id !== null && !streaming && (
                <>
                  <Picker
                    ids={turn.regens}
                    current={turn.resId}
                    disabled={!idle}
                    onPick={props.onNavigate}
                    testId="reply-picker"
                    what="reply"
                  />
                  {!readOnly && (
                    <button
                      type="button"
                      className="link"
                      disabled={!idle}
                      onClick={() => (laterTurns > 0 ? setConfirmRegenerate(true) : regenerate())}
                      data-testid="regenerate"
                    >
                      Regenerate
                    </button>
                  )}
                  {props.onFork && (
                    <button
                      type="button"
                      className="link"
                      onClick={props.onFork}
                      title="A new session with the conversation up to this reply"
                      data-testid="fork"
                    >
                      Fork from here
                    </button>
                  )}
                </>
              )}
            </div>
          )}
          {turn.content.length > 0 && !streaming && props.replyFooter}
          {confirmRegenerate && (
            <div className="callout" role="alert" data-testid="regenerate-hint">
              <span>Regenerating this reply starts a new version of it: {later}.</span>
              <button
                type="button"
                className="primary"
                disabled={!idle}
                onClick={regenerate}
                data-testid="regenerate-confirm"
              >
                Regenerate
              </button>
              <button type="button" onClick={() => setConfirmRegenerate(false)}>
                Cancel
              </button>
            </div>
          )}
        </div>
      </div>
    </article>
  );
}
