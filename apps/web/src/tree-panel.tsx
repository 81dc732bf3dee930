// The whole tree of a session: every message ever written, the active path highlighted. A message's child sits
// below it; where a message has several children (regenerations, edits) they stand side by side, each branch
// indented under the parent, so a child never looks like a sibling. Clicking a message moves the active path to
// it (and on to a tip). The run in flight's messages are listed as in flight until it commits, so the count never
// reads "0 messages" while a prompt is on screen. Each reply, on any branch, can be forked (Fork, beside it) into
// a new session. The last message the context summary in use covers (context policy `summarize`) is marked;
// opening the mark shows the summary's text and tokens (GET …/context), what runs send in place of the turns up to
// there.

import { useState } from 'react';
import type { ContextSummary, NodeId, NodeView, TreeView, Turn } from '@canopy/client';
import { isToolResultMessage, messageText, toolUses, turnText } from '@canopy/client';
import { plural } from './format';

function label(node: NodeView): string {
  const m = node.message;
  if (isToolResultMessage(m)) return '↩ tool result';
  const text = messageText(m);
  const tools = toolUses(m).map((t) => `${t.name}(…)`);
  const files = m.content.flatMap((b) => (b.type === 'attachment' ? [`[${b.name ?? b.mediaType}]`] : []));
  const all = [...files, text, ...tools].filter(Boolean).join(' ');
  return all.length > 60 ? `${all.slice(0, 59)}…` : all;
}

/** The messages of the run in flight, not in the tree yet: a new prompt and its reply, or a reply being written. */
function pendingOf(turns: Turn[]): string[] {
  const pending: string[] = [];
  for (const turn of turns) {
    if (turn.id === null) {
      pending.push(`You: ${turnText(turn, 'user')}`);
      if (turn.content.length > 0 || turn.status === 'streaming') pending.push('Reply being written…');
    } else if (turn.status === 'streaming') pending.push('Reply being written…');
  }
  return pending;
}

export function TreePanel({
  tree,
  focusNode,
  turns,
  notFound,
  idle,
  running,
  onNavigate,
  onFork,
  summarizedThrough = null,
  loadSummary,
  onClose,
}: {
  tree: TreeView | null;
  /** The message the page was opened at (a search hit): marked. */
  focusNode: NodeId | null;
  /** The live turns: the run in flight's messages are shown as pending. */
  turns: Turn[];
  notFound: boolean;
  idle: boolean;
  /** A run is in flight: its messages join the tree when it commits. */
  running: boolean;
  onNavigate: (id: NodeId) => void;
  /** Forks the path from the root to this reply into a new session; absent when forking is not offered. */
  onFork?: (id: NodeId) => void;
  /** The last message the summary in use covers (the session's token meter says it), marked; null: none. */
  summarizedThrough?: NodeId | null;
  /** Reads the summary in use (GET …/context) when its mark is opened. */
  loadSummary?: () => Promise<ContextSummary | null>;
  onClose: () => void;
}) {
  const [summary, setSummary] = useState<SummaryState>({ open: false });
  const toggleSummary = () => {
    if (summary.open) {
      setSummary({ open: false });
      return;
    }
    setSummary({ open: true, loading: true });
    loadSummary?.().then(
      (found) => setSummary({ open: true, found }),
      (err: unknown) => setSummary({ open: true, error: err instanceof Error ? err.message : String(err) }),
    );
  };
  const head = (
    <div className="panel-head">
      <h2>Tree</h2>
      <button type="button" className="panel-close" onClick={onClose}>
        Close
      </button>
    </div>
  );
  if (notFound || !tree) {
    return (
      <aside className="tree" data-testid="tree" aria-label="Tree">
        {head}
        <p className="muted">{notFound ? 'No tree: the session does not exist.' : 'Loading…'}</p>
      </aside>
    );
  }
  const children = new Map<NodeId | null, NodeView[]>();
  for (const node of tree.nodes) {
    const list = children.get(node.parentId) ?? [];
    list.push(node);
    children.set(node.parentId, list);
  }
  const onPath = new Set(tree.path);
  const pending = pendingOf(turns);

  const marked = (node: NodeView) => loadSummary !== undefined && node.id === summarizedThrough;

  const item = (node: NodeView) => (
    <span className="tree-item">
      {nodeButton(node)}
      {marked(node) && (
        <button
          type="button"
          className="link tree-summary-mark"
          onClick={toggleSummary}
          aria-expanded={summary.open}
          aria-controls="tree-summary-detail"
          aria-label={`Summary of the conversation through message #${node.id}`}
          title={`Runs send a summary in place of the messages up to #${node.id}`}
          data-testid="summary-mark"
          data-node-id={node.id}
        >
          Summary
        </button>
      )}
      {onFork && node.message.role === 'assistant' && (
        <button
          type="button"
          className="link tree-fork"
          onClick={() => onFork(node.id)}
          aria-label={`Fork from message #${node.id}`}
          title={`Fork: a new session with the path up to message #${node.id}`}
          data-testid="tree-fork"
          data-node-id={node.id}
        >
          Fork
        </button>
      )}
    </span>
  );

  const nodeButton = (node: NodeView) => (
    <button
      type="button"
      className={`tree-node role-${node.message.role}${onPath.has(node.id) ? ' on-path' : ''}${
        node.id === tree.head ? ' head' : ''
      }${node.id === focusNode ? ' focused' : ''}${marked(node) ? ' summarized' : ''}`}
      disabled={!idle}
      onClick={() => onNavigate(node.id)}
      aria-current={node.id === tree.head ? 'true' : undefined}
      data-testid="tree-node"
      data-node-id={node.id}
      data-parent-id={node.parentId ?? ''}
      data-on-path={onPath.has(node.id)}
      title={`#${node.id} ${node.message.role}`}
    >
      <span className="node-id">#{node.id}</span> {node.message.role === 'user' ? 'You: ' : ''}
      {label(node)}
    </button>
  );

  /** A message and its single-child descendants in one column; where it forks, the branches side by side. */
  const chain = (first: NodeView) => {
    const run: NodeView[] = [first];
    let kids = children.get(first.id) ?? [];
    while (kids.length === 1) {
      run.push(kids[0]!);
      kids = children.get(kids[0]!.id) ?? [];
    }
    return (
      <>
        {run.map((n) => (
          <li key={n.id}>
            {item(n)}
            {marked(n) && summary.open && summaryDetail(n.id)}
          </li>
        ))}
        {kids.length > 1 && <li>{siblings(kids)}</li>}
      </>
    );
  };

  const siblings = (nodes: NodeView[]) => (
    <ul className="siblings" data-testid="tree-siblings">
      {nodes.map((k) => (
        <li key={k.id}>
          <ul className={onPath.has(k.id) ? 'chain on-path' : 'chain'}>{chain(k)}</ul>
        </li>
      ))}
    </ul>
  );

  const summaryDetail = (through: NodeId) => (
    <div
      className="tree-summary-detail"
      id="tree-summary-detail"
      role="region"
      aria-label="Context summary"
      data-testid="summary-detail"
    >
      {'loading' in summary ? (
        <p className="muted">Loading the summary…</p>
      ) : 'error' in summary ? (
        <p className="error">Could not load the summary: {summary.error}</p>
      ) : summary.open && summary.found ? (
        <>
          <p className="muted" data-testid="summary-heading">
            Summary through #{summary.found.throughNodeId} ·{' '}
            <span data-testid="summary-tokens">
              {summary.found.tokens.toLocaleString('en-US')} {summary.found.tokens === 1 ? 'token' : 'tokens'}
            </span>
          </p>
          <p className="summary-text" data-testid="summary-text">
            {summary.found.text}
          </p>
        </>
      ) : (
        <p className="muted">No summary is in use through #{through} any more.</p>
      )}
    </div>
  );

  const roots = children.get(null) ?? [];
  const committed = tree.nodes.length;
  return (
    <aside className="tree" data-testid="tree" aria-label="Tree">
      {head}
      <p className="muted tree-summary" data-testid="tree-summary">
        {committed > 0
          ? `${plural(committed, 'message')}, ${tree.path.length} on the active path${
              pending.length > 0 ? ` · ${pending.length} in flight` : ''
            }`
          : pending.length > 0
            ? `${plural(pending.length, 'message')} in flight (saved when the run ends)`
            : 'No messages yet.'}
      </p>
      {running && pending.length > 0 && (
        <p className="hint">The run in flight adds its messages to the tree when it ends.</p>
      )}
      {roots.length === 1 ? (
        <ul className="tree-graph">{chain(roots[0]!)}</ul>
      ) : (
        roots.length > 1 && <div className="tree-graph">{siblings(roots)}</div>
      )}
      {pending.length > 0 && (
        <>
          <h3>In flight</h3>
          <ul className="tree-graph">
            {pending.map((text, i) => (
              <li key={i}>
                <span className="tree-node pending" data-testid="tree-pending">
                  {text}
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
    </aside>
  );
}

/** The summary mark's panel: closed, loading, loaded (null: none in use), or failed. */
type SummaryState =
  | { open: false }
  | { open: true; loading: true }
  | { open: true; found: ContextSummary | null }
  | { open: true; error: string };
