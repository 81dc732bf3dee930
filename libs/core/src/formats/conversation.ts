// What every import format becomes and every export format starts from: a conversation as Canopy keeps it (the
// session's own fields and its tree), independent of the API and of storage. Also the error a conversion raises
// for bad input, naming the field (a JSON path from the document's root) so a caller can say where it broke.

import type { ClientTool } from '../events';
import type { Message } from '../message';
import type { NodeId, TreeNode } from '../tree';
import type { Usage } from '../usage';

/** The session fields a conversation carries (what an import may set; absent ones take the service's defaults). */
export interface ConversationSession {
  id?: string;
  title: string | null;
  model?: string;
  system: string | null;
  opts?: Record<string, unknown>;
  tools?: ClientTool[];
  metadata: Record<string, unknown>;
  userId?: string | null;
  pinned?: boolean;
  /** ISO 8601. */
  createdAt?: string;
  updatedAt?: string;
}

export interface ConversationTree {
  nodes: TreeNode[];
  path: NodeId[];
  cursors: Record<string, NodeId>;
  nextId: NodeId;
}

/** A summary of a path's oldest turns (context policy `summarize`), stored against the last node it covers. */
export interface ConversationSummary {
  throughNodeId: NodeId;
  text: string;
  /** Its tokens as the session's model counted them. */
  tokens: number;
  /** The model that wrote it. */
  model: string;
  /** Usage of the call that wrote it. */
  usage: Usage;
}

export interface Conversation {
  session: ConversationSession;
  tree: ConversationTree;
  /** Summaries of nodes of the tree, in node order (only the canopy format carries them). */
  summaries?: ConversationSummary[];
  /** The stored files its attachments refer to, with their bytes (only the canopy format carries them). */
  files?: ConversationFile[];
}

/** A stored file a conversation's attachments refer to by id, its bytes as base64. */
export interface ConversationFile {
  id: string;
  name: string;
  mediaType: string;
  /** Base64. */
  data: string;
}

/** Input a format cannot read. `field` is where, e.g. `messages[3].content[0].type`. */
export class FormatError extends Error {
  readonly code = 'bad_request';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field || 'data'}: ${message}`);
    this.name = 'FormatError';
  }
}

/** `base` and a key or index as one field path (`a.b[2].c`). */
export function fieldPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? (base ? `${base}.${key}` : key) : `${base}[${JSON.stringify(key)}]`;
}

/** A linear conversation: messages 1..n, each the parent of the next, the path through all of them. */
export function linearTree(messages: readonly Message[]): ConversationTree {
  const nodes: TreeNode[] = messages.map((message, i) => ({
    id: i + 1,
    parentId: i === 0 ? null : i,
    message,
    usage: null,
  }));
  const cursors: Record<string, NodeId> = {};
  for (let i = 2; i <= nodes.length; i++) cursors[String(i - 1)] = i;
  return { nodes, path: nodes.map((n) => n.id), cursors, nextId: nodes.length + 1 };
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
