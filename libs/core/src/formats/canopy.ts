// The `canopy` format: a whole session as Canopy stores it — its fields, every node of its tree (parent, message,
// usage), the active path and the cursors, and the context summaries stored against its nodes — so that export,
// import and export again give the same document.
// Reading checks everything the database would refuse (ids, parent order, a path that is a parent chain, cursors
// that point at children) and names the field, so a bad document is refused whole, before anything is stored.

import { z } from 'zod';
import type { SessionInfo } from '../events';
import type { Message } from '../message';
import type { NodeId, TreeNode } from '../tree';
import { makeUsage, sumUsage, type Usage } from '../usage';
import {
  clientToolSchema,
  LIMITS,
  boundedJson,
  unstorableTextPath,
  UNSTORABLE_TEXT_MESSAGE,
} from '../api/schemas';
import { messageSchema, usageSchema } from './message-schema';
import {
  FormatError,
  fieldPath,
  type Conversation,
  type ConversationFile,
  type ConversationSummary,
} from './conversation';

export const CANOPY_FORMAT_VERSION = 1;

export interface CanopyDocument {
  format: 'canopy';
  version: typeof CANOPY_FORMAT_VERSION;
  session: {
    id: string;
    title: string | null;
    model: string;
    system: string | null;
    opts: Record<string, unknown>;
    tools: SessionInfo['tools'];
    metadata: Record<string, unknown>;
    userId: string | null;
    pinned: boolean;
    createdAt: string;
    updatedAt: string;
  };
  tree: {
    nodes: Array<{ id: NodeId; parentId: NodeId | null; message: Message; usage: Usage | null }>;
    path: NodeId[];
    cursors: Record<string, NodeId>;
    nextId: NodeId;
  };
  /** Usage summed over every node (in id order); informative: an import sums the nodes again. */
  usage: Usage;
  /**
   * The context summaries stored against nodes of the tree (context policy `summarize`), in node order; absent
   * when there are none (documents written before summaries existed have none).
   */
  summaries?: ConversationSummary[];
  /**
   * The stored files the tree's attachments refer to (`fileId`), with their bytes as base64; absent when there are
   * none. An import stores them again as files of its own (new ids, the attachments changed to match).
   */
  files?: ConversationFile[];
}

/** The most nodes one document may hold. */
export const MAX_IMPORT_NODES = 100_000;

/**
 * A session (with `pinned`; not its token meter, counted again after a run of the imported copy) and its tree as a
 * canopy document. Nodes in id order.
 */
export function toCanopyDocument(
  session: Omit<SessionInfo, 'pinned' | 'context'> & { pinned?: boolean },
  tree: {
    nodes: readonly TreeNode[];
    path: readonly NodeId[];
    cursors: Record<string, NodeId>;
    nextId: NodeId;
  },
  summaries: readonly ConversationSummary[] = [],
  files: readonly ConversationFile[] = [],
): CanopyDocument {
  const nodes = [...tree.nodes]
    .sort((a, b) => a.id - b.id)
    .map((n) => ({ id: n.id, parentId: n.parentId, message: n.message, usage: n.usage }));
  const cursors: Record<string, NodeId> = {};
  for (const key of Object.keys(tree.cursors).sort((a, b) => Number(a) - Number(b)))
    cursors[key] = tree.cursors[key]!;
  return {
    format: 'canopy',
    version: CANOPY_FORMAT_VERSION,
    session: {
      id: session.id,
      title: session.title,
      model: session.model,
      system: session.system,
      opts: session.opts,
      tools: session.tools,
      metadata: session.metadata,
      userId: session.userId,
      pinned: session.pinned ?? false,
      createdAt: session.createdAt,
      updatedAt: session.updatedAt,
    },
    tree: { nodes, path: [...tree.path], cursors, nextId: tree.nextId },
    usage: sumUsage(nodes.map((n) => n.usage)),
    ...(summaries.length
      ? {
          summaries: [...summaries]
            .sort((a, b) => a.throughNodeId - b.throughNodeId)
            .map((c) => ({
              throughNodeId: c.throughNodeId,
              text: c.text,
              tokens: c.tokens,
              model: c.model,
              usage: c.usage,
            })),
        }
      : {}),
    ...(files.length
      ? { files: files.map((f) => ({ id: f.id, name: f.name, mediaType: f.mediaType, data: f.data })) }
      : {}),
  };
}

const isoDate = z
  .string()
  .max(40)
  .refine((s) => !Number.isNaN(Date.parse(s)), { message: 'not a date' });

const nodeId = z.number().int().min(1).max(2_147_483_646);

const canopyDocumentSchema = z
  .object({
    format: z.literal('canopy'),
    version: z.literal(CANOPY_FORMAT_VERSION),
    session: z
      .object({
        id: z
          .string()
          .regex(/^[A-Za-z0-9_-]{1,128}$/)
          .optional(),
        title: z.string().max(500).nullable().optional(),
        model: z.string().min(3).max(200).optional(),
        system: z.string().max(LIMITS.system).nullable().optional(),
        opts: z.record(z.string().max(200), boundedJson()).optional(),
        tools: z.array(clientToolSchema).max(LIMITS.tools).optional(),
        metadata: z.record(z.string().min(1).max(100), boundedJson()).optional(),
        userId: z.string().min(1).max(200).nullable().optional(),
        pinned: z.boolean().optional(),
        createdAt: isoDate.optional(),
        updatedAt: isoDate.optional(),
      })
      .strict(),
    tree: z
      .object({
        nodes: z
          .array(
            z
              .object({
                id: nodeId,
                parentId: nodeId.nullable(),
                message: messageSchema,
                usage: usageSchema.nullable().optional(),
              })
              .strict(),
          )
          .max(MAX_IMPORT_NODES),
        path: z.array(nodeId).max(MAX_IMPORT_NODES),
        cursors: z.record(z.string().regex(/^[1-9]\d{0,9}$/), nodeId),
        nextId: nodeId.optional(),
      })
      .strict(),
    usage: usageSchema.optional(),
    summaries: z
      .array(
        z
          .object({
            throughNodeId: nodeId,
            text: z
              .string()
              .max(LIMITS.system)
              .refine((t) => unstorableTextPath(t) === null, { message: UNSTORABLE_TEXT_MESSAGE }),
            tokens: z.number().int().min(0).max(2_147_483_647),
            model: z.string().min(1).max(200),
            usage: usageSchema.optional(),
          })
          .strict(),
      )
      .max(MAX_IMPORT_NODES)
      .optional(),
    files: z
      .array(
        z
          .object({
            id: z.uuid(),
            name: z.string().min(1).max(255),
            mediaType: z.string().min(1).max(200),
            data: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64'),
          })
          .strict(),
      )
      .max(1_000)
      .optional(),
  })
  .strict();

/** Reads a canopy document, checking that its tree is one the store can hold exactly. */
export function fromCanopyDocument(data: unknown, base = 'data'): Conversation {
  const parsed = canopyDocumentSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new FormatError(
      issue.path.reduce<string>((p, k) => fieldPath(p, k as string | number), base),
      issue.message,
    );
  }
  const doc = parsed.data;
  const at = (...keys: Array<string | number>) => keys.reduce<string>((p, k) => fieldPath(p, k), base);
  const byId = new Map<NodeId, TreeNode>();
  let maxId = 0;
  doc.tree.nodes.forEach((n, i) => {
    if (byId.has(n.id)) throw new FormatError(at('tree', 'nodes', i, 'id'), `duplicate node id ${n.id}`);
    if (n.parentId !== null && n.parentId >= n.id) {
      throw new FormatError(
        at('tree', 'nodes', i, 'parentId'),
        `a parent must be older (smaller id) than its child`,
      );
    }
    byId.set(n.id, {
      id: n.id,
      parentId: n.parentId,
      message: n.message,
      usage: n.usage ? makeUsage(n.usage) : null,
    });
    if (n.id > maxId) maxId = n.id;
  });
  doc.tree.nodes.forEach((n, i) => {
    if (n.parentId !== null && !byId.has(n.parentId)) {
      throw new FormatError(at('tree', 'nodes', i, 'parentId'), `unknown parent ${n.parentId}`);
    }
  });
  doc.tree.path.forEach((id, i) => {
    const node = byId.get(id);
    if (!node) throw new FormatError(at('tree', 'path', i), `unknown node ${id}`);
    const expected = i === 0 ? null : doc.tree.path[i - 1];
    if (node.parentId !== expected)
      throw new FormatError(at('tree', 'path', i), 'the path is not a parent chain from a root');
  });
  for (const [key, child] of Object.entries(doc.tree.cursors)) {
    if (byId.get(child)?.parentId !== Number(key)) {
      throw new FormatError(
        at('tree', 'cursors', key),
        `cursor ${key} -> ${child} does not point at a child`,
      );
    }
  }
  const covered = new Set<NodeId>();
  (doc.summaries ?? []).forEach((c, i) => {
    if (!byId.has(c.throughNodeId))
      throw new FormatError(at('summaries', i, 'throughNodeId'), `unknown node ${c.throughNodeId}`);
    if (covered.has(c.throughNodeId))
      throw new FormatError(
        at('summaries', i, 'throughNodeId'),
        `a second summary of node ${c.throughNodeId}`,
      );
    covered.add(c.throughNodeId);
  });
  const fileIds = new Set<string>();
  (doc.files ?? []).forEach((f, i) => {
    if (fileIds.has(f.id)) throw new FormatError(at('files', i, 'id'), `a second file ${f.id}`);
    fileIds.add(f.id);
  });
  const nextId = doc.tree.nextId ?? maxId + 1;
  if (nextId <= maxId)
    throw new FormatError(at('tree', 'nextId'), `must be above the highest node id (${maxId})`);
  const s = doc.session;
  return {
    session: {
      ...(s.id !== undefined ? { id: s.id } : {}),
      title: s.title ?? null,
      ...(s.model !== undefined ? { model: s.model } : {}),
      system: s.system ?? null,
      ...(s.opts !== undefined ? { opts: s.opts } : {}),
      ...(s.tools !== undefined ? { tools: s.tools } : {}),
      metadata: s.metadata ?? {},
      ...(s.userId !== undefined ? { userId: s.userId } : {}),
      ...(s.pinned !== undefined ? { pinned: s.pinned } : {}),
      ...(s.createdAt !== undefined ? { createdAt: new Date(s.createdAt).toISOString() } : {}),
      ...(s.updatedAt !== undefined ? { updatedAt: new Date(s.updatedAt).toISOString() } : {}),
    },
    tree: {
      nodes: [...byId.values()].sort((a, b) => a.id - b.id),
      path: doc.tree.path,
      cursors: doc.tree.cursors,
      nextId,
    },
    ...(doc.summaries?.length
      ? {
          summaries: doc.summaries
            .map((c) => ({ ...c, usage: makeUsage(c.usage ?? {}) }))
            .sort((a, b) => a.throughNodeId - b.throughNodeId),
        }
      : {}),
    ...(doc.files?.length ? { files: doc.files } : {}),
  };
}
