// A conversation of a ChatGPT data export (one entry of its conversations.json). Its `mapping` is a tree of nodes
// with parent and children ids, the branches of every edit and regeneration: they are kept. Nodes Canopy has no
// message for (the empty root, system and tool messages, hidden context, nodes without text) are left out and
// their children hang from the nearest kept ancestor. Ids are renumbered parents first (children by creation
// time), and the active path is the one leading to `current_node`.

import type { Block, Message } from '../message';
import type { NodeId, TreeNode } from '../tree';
import { FormatError, fieldPath, isRecord, type Conversation } from './conversation';

interface Entry {
  key: string;
  parent: string | null;
  message: Message | null;
  created: number;
  /** Its children, by their parent pointers (a node's `children` list is not trusted over them). */
  kids: Entry[] | null;
}

export function fromChatGpt(data: unknown, now: number, base = 'data'): Conversation {
  if (!isRecord(data)) throw new FormatError(base, 'expected a conversation object');
  const mapping = data.mapping;
  const mapAt = fieldPath(base, 'mapping');
  if (!isRecord(mapping))
    throw new FormatError(mapAt, 'expected the conversation mapping (an object of nodes)');
  // Every step below is one pass over the nodes (children sorted per parent): a chain of any length, or a node
  // with any number of children, costs in proportion to its size and never recurses.
  const entries = new Map<string, Entry>();
  for (const key of Object.keys(mapping)) {
    const raw = mapping[key];
    if (!isRecord(raw)) throw new FormatError(fieldPath(mapAt, key), 'expected a node');
    const parent = raw.parent === null || raw.parent === undefined ? null : raw.parent;
    if (parent !== null && typeof parent !== 'string')
      throw new FormatError(fieldPath(fieldPath(mapAt, key), 'parent'), 'expected a node id or null');
    const children = raw.children === undefined ? [] : raw.children;
    if (!Array.isArray(children) || !children.every((c) => typeof c === 'string'))
      throw new FormatError(fieldPath(fieldPath(mapAt, key), 'children'), 'expected an array of node ids');
    const message =
      raw.message === null || raw.message === undefined
        ? null
        : toMessage(raw.message, () => fieldPath(fieldPath(mapAt, key), 'message'), now);
    const created =
      isRecord(raw.message) && typeof raw.message.create_time === 'number'
        ? raw.message.create_time * 1000
        : now;
    entries.set(key, { key, parent, message, created, kids: null });
  }
  const roots: Entry[] = [];
  for (const e of entries.values()) {
    if (e.parent === null) {
      roots.push(e);
      continue;
    }
    const parent = entries.get(e.parent);
    if (!parent)
      throw new FormatError(
        fieldPath(fieldPath(mapAt, e.key), 'parent'),
        `unknown node ${JSON.stringify(e.parent)}`,
      );
    (parent.kids ??= []).push(e);
  }

  // Walk from the roots, parents before children, children in creation order; every kept node gets the next id.
  // Each node has one parent, so the walk reaches each at most once; nodes it never reaches sit on a cycle.
  const ids = new Map<string, NodeId>();
  const nodes: TreeNode[] = [];
  const stack: Array<{ e: Entry; parent: NodeId | null }> = [];
  roots.sort(byCreation);
  for (let i = roots.length - 1; i >= 0; i--) stack.push({ e: roots[i]!, parent: null });
  let reached = 0;
  while (stack.length) {
    const { e, parent } = stack.pop()!;
    reached++;
    let here = parent;
    if (e.message) {
      here = nodes.length + 1;
      nodes.push({ id: here, parentId: parent, message: e.message, usage: null });
      ids.set(e.key, here);
    } else if (parent !== null) {
      ids.set(e.key, parent);
    }
    const kids = e.kids;
    if (!kids) continue;
    kids.sort(byCreation);
    for (let i = kids.length - 1; i >= 0; i--) stack.push({ e: kids[i]!, parent: here });
  }
  if (reached !== entries.size)
    throw new FormatError(mapAt, 'the mapping has a cycle (nodes not reachable from a root)');

  // The active path: the kept ancestors of current_node (or of the newest node), root first.
  const current = typeof data.current_node === 'string' ? data.current_node : null;
  if (current !== null && !entries.has(current))
    throw new FormatError(fieldPath(base, 'current_node'), `unknown node ${JSON.stringify(current)}`);
  const tip = current !== null ? ids.get(current) : nodes.length ? nodes.length : undefined;
  const path: NodeId[] = [];
  for (let id = tip ?? null; id !== null; id = nodes[id - 1]!.parentId) path.push(id);
  path.reverse();
  const cursors: Record<string, NodeId> = {};
  for (let i = 1; i < path.length; i++) cursors[String(path[i - 1])] = path[i]!;

  const title = typeof data.title === 'string' ? data.title.slice(0, 500) : null;
  const id =
    typeof data.conversation_id === 'string'
      ? data.conversation_id
      : typeof data.id === 'string'
        ? data.id
        : null;
  const slug =
    typeof data.default_model_slug === 'string' && data.default_model_slug ? data.default_model_slug : null;
  const time = (v: unknown) =>
    typeof v === 'number' && Number.isFinite(v) ? new Date(v * 1000).toISOString() : undefined;
  const createdAt = time(data.create_time);
  const updatedAt = time(data.update_time);
  return {
    session: {
      title,
      system: null,
      metadata: { importedFrom: 'chatgpt', ...(id ? { conversationId: id.slice(0, 200) } : {}) },
      ...(slug ? { model: `openai:${slug}` } : {}),
      ...(createdAt ? { createdAt } : {}),
      ...(updatedAt ? { updatedAt } : {}),
    },
    tree: { nodes, path, cursors, nextId: nodes.length + 1 },
  };
}

function byCreation(a: Entry, b: Entry): number {
  return a.created - b.created || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/** A user or assistant message with text; null for what Canopy does not keep. */
function toMessage(raw: unknown, where: () => string, now: number): Message | null {
  if (!isRecord(raw)) throw new FormatError(where(), 'expected a message or null');
  const author = isRecord(raw.author) ? raw.author.role : undefined;
  if (author !== 'user' && author !== 'assistant') return null;
  const meta = isRecord(raw.metadata) ? raw.metadata : {};
  if (meta.is_visually_hidden_from_conversation === true) return null;
  const content = raw.content;
  if (!isRecord(content)) throw new FormatError(fieldPath(where(), 'content'), 'expected a content object');
  const blocks: Block[] = [];
  const type = content.content_type;
  if (type === 'text' || type === 'multimodal_text') {
    const parts = content.parts;
    if (!Array.isArray(parts))
      throw new FormatError(fieldPath(fieldPath(where(), 'content'), 'parts'), 'expected an array');
    const text = parts.filter((p): p is string => typeof p === 'string').join('\n\n');
    if (text.trim()) blocks.push({ type: 'text', text });
  } else if (type === 'code' && typeof content.text === 'string') {
    blocks.push({
      type: 'text',
      text:
        '```' +
        (typeof content.language === 'string' ? content.language : '') +
        '\n' +
        content.text +
        '\n```',
    });
  } else if (type === 'thoughts' && Array.isArray(content.thoughts)) {
    const text = content.thoughts
      .map((t: unknown) => (isRecord(t) && typeof t.content === 'string' ? t.content : ''))
      .filter(Boolean)
      .join('\n\n');
    if (text) blocks.push({ type: 'thinking', text });
  }
  if (blocks.length === 0) return null;
  const timestamp =
    typeof raw.create_time === 'number' && Number.isFinite(raw.create_time)
      ? Math.round(raw.create_time * 1000)
      : now;
  return { role: author, content: blocks, timestamp };
}
