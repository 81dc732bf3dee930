// The whole tree of a session: every message ever written, branches indented where they fork, the active path
// highlighted. Clicking a message moves the active path to it (and on to a tip).

import type { NodeId, NodeView, TreeView } from '@canopy/client';
import { isToolResultMessage, messageText, toolUses } from '@canopy/client';

function label(node: NodeView): string {
  const m = node.message;
  if (isToolResultMessage(m)) return '↩ tool result';
  const text = messageText(m);
  const tools = toolUses(m).map((t) => `${t.name}(…)`);
  const all = [text, ...tools].filter(Boolean).join(' ');
  return all.length > 60 ? `${all.slice(0, 59)}…` : all;
}

export function TreePanel({
  tree,
  idle,
  running,
  onNavigate,
}: {
  tree: TreeView | null;
  idle: boolean;
  /** A run is in flight: its messages join the tree when it commits. */
  running: boolean;
  onNavigate: (id: NodeId) => void;
}) {
  if (!tree) {
    return (
      <aside className="tree" data-testid="tree">
        <h2>Tree</h2>
        <p className="muted">Loading…</p>
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

  const item = (node: NodeView) => (
    <button
      type="button"
      className={`tree-node role-${node.message.role}${onPath.has(node.id) ? ' on-path' : ''}${
        node.id === tree.head ? ' head' : ''
      }`}
      disabled={!idle}
      onClick={() => onNavigate(node.id)}
      data-testid="tree-node"
      data-node-id={node.id}
      data-on-path={onPath.has(node.id)}
      title={`#${node.id} ${node.message.role}`}
    >
      <span className="node-id">#{node.id}</span> {label(node)}
    </button>
  );

  /** A run of single children in one column; where it forks, one indented branch per child. */
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
        {kids.length > 1 && (
          <li>
            <ul className="branches">
              {kids.map((k) => (
                <li key={k.id} className={onPath.has(k.id) ? 'branch on-path' : 'branch'}>
                  <ul>{chain(k)}</ul>
                </li>
              ))}
            </ul>
          </li>
        )}
      </>
    );
  };

  const roots = children.get(null) ?? [];
  return (
    <aside className="tree" data-testid="tree">
      <h2>Tree</h2>
      <p className="muted" data-testid="tree-summary">
        {tree.nodes.length} messages, {tree.path.length} on the active path
      </p>
      {running && <p className="muted">The run in flight adds its messages when it ends.</p>}
      {roots.length === 0 ? (
        <p className="muted">Empty.</p>
      ) : roots.length === 1 ? (
        <ul className="tree-list">{chain(roots[0]!)}</ul>
      ) : (
        <ul className="tree-list branches">
          {roots.map((r) => (
            <li key={r.id} className={onPath.has(r.id) ? 'branch on-path' : 'branch'}>
              <ul>{chain(r)}</ul>
            </li>
          ))}
        </ul>
      )}
    </aside>
  );
}
