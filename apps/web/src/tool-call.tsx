// A tool call in a reply: its input, the progress it reports while it runs, its result, and — while the run is
// paused on it — the decision: approve (server tools run on approval), answer with a result (what a client tool
// needs), or reject.

import { useState } from 'react';
import type { Decision } from '@canopy/client';
import { toolResultText, type ToolResultBlock, type ToolUseBlock } from '@canopy/client';
import { shortJson } from './format';

export function ToolCall({
  block,
  result,
  progress,
  awaiting,
  clientTool,
  running,
  onDecide,
}: {
  block: ToolUseBlock;
  result: ToolResultBlock | null;
  progress: unknown[];
  awaiting: boolean;
  clientTool: boolean;
  running: boolean;
  onDecide: (decision: Decision) => void;
}) {
  const [text, setText] = useState('');
  const state = result
    ? result.isError
      ? 'error'
      : 'done'
    : awaiting
      ? 'awaiting decision'
      : running
        ? 'running'
        : 'no result';

  return (
    <div
      className={`tool-call tool-${state.replace(' ', '-')}`}
      data-testid="tool-call"
      data-tool={block.name}
    >
      <div className="tool-head">
        <span className="tool-name">{block.name}</span>
        <span className="muted">{clientTool ? 'client tool' : 'server tool'}</span>
        <code className="tool-input">{shortJson(block.input)}</code>
        <span className="tool-state" data-testid="tool-state">
          {state}
        </span>
      </div>
      {progress.length > 0 && (
        <ol className="tool-progress" data-testid="tool-progress">
          {progress.map((p, i) => (
            <li key={i}>{progressText(p)}</li>
          ))}
        </ol>
      )}
      {result && (
        <pre className={result.isError ? 'tool-result error' : 'tool-result'} data-testid="tool-result">
          {toolResultText(result)}
        </pre>
      )}
      {awaiting && (
        <div className="decision" data-testid="tool-decision">
          <input
            aria-label={clientTool ? `Result of ${block.name}` : `Reason for ${block.name}`}
            value={text}
            placeholder={clientTool ? 'Result to send back (or a reason to reject)' : 'Reason (optional)'}
            onChange={(e) => setText(e.target.value)}
            data-testid="tool-decision-text"
          />
          {!clientTool && (
            <button type="button" onClick={() => onDecide({ type: 'execute' })} data-testid="tool-approve">
              Approve
            </button>
          )}
          <button
            type="button"
            disabled={!text.trim()}
            onClick={() => onDecide({ type: 'result', content: text.trim() })}
            data-testid="tool-answer"
          >
            Answer
          </button>
          <button
            type="button"
            onClick={() => onDecide({ type: 'reject', ...(text.trim() ? { reason: text.trim() } : {}) })}
            data-testid="tool-reject"
          >
            Reject
          </button>
        </div>
      )}
    </div>
  );
}

/** A progress payload in words: a `step` (with its `percent`) as such, anything else as compact JSON. */
function progressText(p: unknown): string {
  if (typeof p === 'string') return p;
  const { step, percent } = (typeof p === 'object' && p !== null ? p : {}) as {
    step?: unknown;
    percent?: unknown;
  };
  if (typeof step === 'string') return typeof percent === 'number' ? `${step} (${percent}%)` : step;
  return shortJson(p);
}
