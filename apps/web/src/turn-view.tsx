// One turn of the conversation: the prompt (with its versions and an edit box) and the reply (its text, thinking
// and tool calls, its versions and a regenerate button).

import { useState } from 'react';
import type { Decision, NodeId, Turn } from '@canopy/client';
import { turnText } from '@canopy/client';
import { Picker } from './picker';
import { ToolCall } from './tool-call';

export interface TurnViewProps {
  turn: Turn;
  /** Commands may be sent (the session is idle and none is in flight). */
  idle: boolean;
  /** The node an edit of this prompt branches from (null: a new root); undefined when it cannot be edited. */
  editTarget: NodeId | null | undefined;
  progress: Record<string, unknown[]>;
  awaiting: Set<string>;
  clientTools: Set<string>;
  onNavigate: (id: NodeId) => void;
  onRegenerate: (userNodeId: NodeId) => void;
  onEdit: (target: NodeId | null, text: string) => Promise<boolean>;
  onDecide: (toolUseId: string, decision: Decision) => void;
}

export function TurnView(props: TurnViewProps) {
  const { turn, idle, editTarget } = props;
  const [editing, setEditing] = useState<string | null>(null);
  const streaming = turn.status === 'streaming';
  const prompt = turnText(turn, 'user');

  return (
    <article className={`turn turn-${turn.status}`} data-testid="turn" data-turn-id={turn.id ?? ''}>
      <div className="prompt">
        {editing === null ? (
          <div className="bubble user" data-testid="turn-prompt">
            {prompt}
          </div>
        ) : (
          <form
            className="edit"
            onSubmit={(e) => {
              e.preventDefault();
              if (editTarget === undefined || !editing.trim()) return;
              void props.onEdit(editTarget, editing.trim()).then((ok) => ok && setEditing(null));
            }}
          >
            <textarea
              rows={2}
              value={editing}
              onChange={(e) => setEditing(e.target.value)}
              data-testid="edit-input"
              autoFocus
            />
            <button type="submit" disabled={!idle || !editing.trim()} data-testid="edit-save">
              Save &amp; send
            </button>
            <button type="button" onClick={() => setEditing(null)} data-testid="edit-cancel">
              Cancel
            </button>
          </form>
        )}
        <div className="turn-actions">
          <Picker
            ids={turn.edits}
            current={turn.id}
            disabled={!idle}
            onPick={props.onNavigate}
            testId="prompt-picker"
          />
          {editing === null && editTarget !== undefined && !streaming && (
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
      <div className="reply" data-testid="turn-reply" data-res-id={turn.resId ?? ''}>
        {turn.content.map((block, i) => {
          if (block.type === 'text') {
            return (
              <div key={i} className="bubble assistant" data-testid="reply-text">
                {block.text}
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
              awaiting={props.awaiting.has(block.id)}
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
        {turn.error && <p className="error">{turn.error}</p>}
      </div>
      {turn.id !== null && !streaming && (
        <div className="turn-actions">
          <Picker
            ids={turn.regens}
            current={turn.resId}
            disabled={!idle}
            onPick={props.onNavigate}
            testId="reply-picker"
          />
          <button
            type="button"
            className="link"
            disabled={!idle}
            onClick={() => turn.id !== null && props.onRegenerate(turn.id)}
            data-testid="regenerate"
          >
            Regenerate
          </button>
        </div>
      )}
    </article>
  );
}
