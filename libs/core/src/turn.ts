// The UI view of a conversation (turns): the active path cut into turns at every user message that is a
// prompt (tool-result user messages fold into the turn before them), with the branching metadata a chat UI
// needs for its `‹ 2/3 ›` pickers, and the streaming reducers clients apply to live events. Reducers are pure:
// they return a new turn and never touch the one they were given.

import {
  isAttachmentBlock,
  isTextBlock,
  isToolResultBlock,
  isTurnBoundary,
  joinText,
  type AssistantBlock,
  type AttachmentBlock,
  type Block,
  type Message,
  type Role,
  type TextBlock,
  type ToolResultBlock,
} from './message';
import type { NodeId, Tree, TreeNode } from './tree';
import { emptyUsage, sumUsage, type Usage } from './usage';

export type TurnStatus = 'complete' | 'streaming' | 'error';

export interface Turn {
  /** Node id of the user message that starts the turn (null for a turn built from unsaved messages). */
  id: NodeId | null;
  /** Node id of the first assistant message of the turn, null while none exists. */
  resId: NodeId | null;
  status: TurnStatus;
  userText: TextBlock[];
  userAttachments: AttachmentBlock[];
  userTimestamp: number | null;
  /** Every assistant block of the turn, across all of its assistant messages. */
  content: AssistantBlock[];
  /** Timestamp of the last assistant message; null while there is none. */
  timestamp: number | null;
  toolResults: Record<string, ToolResultBlock>;
  error: string | null;
  usage: Usage;
  /** Sorted ids of the user messages sharing this turn's parent (all roots for a root), this one included. */
  edits: NodeId[];
  /** Sorted ids of the children of this turn's user message, resId included. */
  regens: NodeId[];
  /** A newer prompt interrupted the turn's run (`ifBusy: "interrupt"`): it holds what that run kept. */
  interrupted?: true;
}

/** The active path (or a message list) cannot be cut into turns: it does not start with a user prompt. */
export class TurnProjectionError extends Error {
  readonly code = 'invalid_turn_path';
  constructor(message: string) {
    super(message);
    this.name = 'TurnProjectionError';
  }
}

/** Builds a turn from its messages: the first must be the user prompt, the rest fold in. */
export function newTurn(id: NodeId | null, messages: readonly Message[], usage: Usage = emptyUsage()): Turn {
  const [user, ...rest] = messages;
  if (!user || user.role !== 'user') {
    throw new TurnProjectionError(
      user
        ? 'a turn must start with a user message, not an assistant message'
        : 'a turn needs at least a user message',
    );
  }
  const turn: Turn = {
    id,
    resId: null,
    status: 'complete',
    userText: user.content.filter(isTextBlock),
    userAttachments: user.content.filter(isAttachmentBlock),
    userTimestamp: user.timestamp,
    content: [],
    timestamp: null,
    toolResults: {},
    error: null,
    usage,
    edits: [],
    regens: [],
  };
  if (user.interrupted) turn.interrupted = true;
  for (const message of rest) foldMessage(turn, message);
  return turn;
}

/**
 * Cuts the tree's active path into turns. Throws TurnProjectionError if the path starts with no user prompt; a
 * partial tree's path that starts below a root (a live view's recent part) starts at its first prompt instead.
 */
export function allTurns(tree: Tree): Turn[] {
  const turns: Turn[] = [];
  let chunk: TreeNode[] = [];
  const startsBelowRoot =
    tree.partial && tree.path.length > 0 && tree.getNode(tree.path[0]!)!.parentId !== null;
  for (const node of tree) {
    if (isTurnBoundary(node.message)) {
      if (chunk.length > 0) turns.push(fromNodes(tree, chunk));
      chunk = [node];
    } else {
      if (chunk.length === 0) {
        if (startsBelowRoot && turns.length === 0) continue;
        throw leadingNodeError(node);
      }
      chunk.push(node);
    }
  }
  if (chunk.length > 0) turns.push(fromNodes(tree, chunk));
  return turns;
}

/**
 * The turn that starts at the given node, or undefined when that node is not on the active path or does not
 * start a turn (an assistant node, a tool-result message).
 */
export function getTurn(tree: Tree, nodeId: NodeId): Turn | undefined {
  const path = tree.path;
  const start = path.indexOf(nodeId);
  if (start < 0) return undefined;
  const first = tree.getNode(nodeId)!;
  if (!isTurnBoundary(first.message)) return undefined;
  const chunk: TreeNode[] = [first];
  for (let i = start + 1; i < path.length; i++) {
    const node = tree.getNode(path[i]!)!;
    if (isTurnBoundary(node.message)) break;
    chunk.push(node);
  }
  return fromNodes(tree, chunk);
}

/** Text of the user prompt or of the assistant's text blocks, joined with blank lines. */
export function turnText(turn: Turn, role: Role): string {
  return role === 'user' ? joinText(turn.userText) : joinText(turn.content);
}

// Streaming reducers

/** Appends a content block (a new text, thinking or tool-use block has started). */
export function pushContent(turn: Turn, block: AssistantBlock): Turn {
  return { ...turn, content: [...turn.content, block] };
}

/**
 * Appends a text delta to the last block when it is a text or thinking block. A client that joined mid-stream
 * may have no such block yet: the delta then starts a new text block instead of being lost.
 */
export function pushDelta(turn: Turn, delta: string): Turn {
  const last = turn.content[turn.content.length - 1];
  if (last && (last.type === 'text' || last.type === 'thinking')) {
    return { ...turn, content: [...turn.content.slice(0, -1), { ...last, text: last.text + delta }] };
  }
  return pushContent(turn, { type: 'text', text: delta });
}

/** Stores a tool result under its tool-use id. */
export function putToolResult(turn: Turn, result: ToolResultBlock): Turn {
  return { ...turn, toolResults: { ...turn.toolResults, [result.toolUseId]: result } };
}

/**
 * Replaces a finalised block: a block with an id (tool use) replaces the block with that id, so parallel tool
 * uses never clobber each other, and is appended when no block has it yet; a block without an id replaces the
 * last block (or is appended to an empty turn).
 */
export function replaceContent(turn: Turn, block: AssistantBlock): Turn {
  const content = [...turn.content];
  if (block.type === 'tool_use') {
    const index = content.findIndex((b) => b.type === 'tool_use' && b.id === block.id);
    if (index >= 0) content[index] = block;
    else content.push(block);
  } else if (content.length > 0) {
    content[content.length - 1] = block;
  } else {
    content.push(block);
  }
  return { ...turn, content };
}

/**
 * Marks the turns whose last run failed (`status: "error"` with the error). `failed` names them by
 * their user node; a turn that is not named keeps its status.
 */
export function withRunErrors(
  turns: readonly Turn[],
  failed: ReadonlyArray<{ nodeId: NodeId; error: { message: string } }>,
): Turn[] {
  const errors = new Map(failed.map((f) => [f.nodeId, f.error.message]));
  return turns.map((turn) => {
    const error = turn.id !== null ? errors.get(turn.id) : undefined;
    return error === undefined ? turn : { ...turn, status: 'error', error };
  });
}

/** The turn functions under short names (`Turns.new`, `Turns.all`, ...). */
export const Turns = {
  all: allTurns,
  get: getTurn,
  new: newTurn,
  text: turnText,
  pushContent,
  pushDelta,
  putToolResult,
  replaceContent,
} as const;

function fromNodes(tree: Tree, nodes: readonly TreeNode[]): Turn {
  const [first, ...rest] = nodes as [TreeNode, ...TreeNode[]];
  const turn = newTurn(
    first.id,
    nodes.map((n) => n.message),
    sumUsage(rest.map((n) => n.usage)),
  );
  turn.resId = rest[0]?.id ?? null;
  turn.edits = first.parentId === null ? tree.roots() : tree.children(first.parentId);
  turn.regens = tree.children(first.id);
  return turn;
}

function foldMessage(turn: Turn, message: Message): void {
  if (message.interrupted) turn.interrupted = true;
  if (message.role === 'assistant') {
    for (const block of message.content) if (isAssistantBlock(block)) turn.content.push(block);
    turn.timestamp = message.timestamp;
    return;
  }
  for (const block of message.content) {
    if (isToolResultBlock(block)) turn.toolResults[block.toolUseId] = block;
  }
}

function isAssistantBlock(block: Block): block is AssistantBlock {
  return block.type === 'text' || block.type === 'thinking' || block.type === 'tool_use';
}

function leadingNodeError(node: TreeNode): TurnProjectionError {
  const what = node.message.role === 'assistant' ? 'an assistant message' : 'a tool-result message';
  return new TurnProjectionError(
    `the active path starts with ${what} (node ${node.id}); a turn must start with a user prompt`,
  );
}
