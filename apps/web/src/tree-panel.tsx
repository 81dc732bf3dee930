// The whole tree of a session: every message ever written, the active path highlighted. A message's child sits
// below it; where a message has several children (regenerations, edits) they stand side by side, each branch
// indented under the parent, so a child never looks like a sibling. Clicking a message moves the active path to
// it (and on to a tip). The run in flight's messages are listed as in flight until it commits, so the count never
// reads "0 messages" while a prompt is on screen. Each reply, on any branch, can be forked (Fork, beside it) into
// a new session.

import type { NodeId, NodeView, TreeView, Turn } from '@canopy/client';
import { isToolResultMessage, messageText, toolUses, turnText } from '@canopy/client';
import { plural } from './format';

function label(node: NodeView): string {
  const m = node.message;
  if (isToolResultMessage(m)) return '↩ tool result';
  const text = messageText(m);
  const tools = toolUses(m).map((t) => `${t.name}(…)`);
  const all = [text, ...tools].filter(Boolean).join(' ');
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
  onClose: () => void;
}) {
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

  const item = (node: NodeView) => (
    <span className="tree-item">
      {nodeButton(node)}
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
      }${node.id === focusNode ? ' focused' : ''}`}
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
          <li key={n.id}>{item(n)}</li>
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
