// The response bodies of API.md as types, for end-to-end tests that read them (`api.get<Page>(…)`). They state
// what the contract promises; the tests check the actual answers against them at runtime.

import type {
  InFlight,
  JsonResult,
  Message,
  NodeId,
  RunKind,
  RunStatus,
  SessionInfo,
  Turn,
  TurnResultData,
  Usage,
} from '@canopy/core';

export type { JsonResult, SessionInfo as Session, Turn, TurnResultData as TurnResult };

export interface Page {
  data: SessionInfo[];
  nextCursor: string | null;
}

export interface SessionDetail extends SessionInfo {
  head: NodeId | null;
  path: NodeId[];
  usage: Usage;
  live?: { controllers: number; observers: number };
  inFlight?: Pick<InFlight, 'runId' | 'pending' | 'partial'>;
}

export interface NodeView {
  id: NodeId;
  parentId: NodeId | null;
  message: Message;
  usage: Usage | null;
  createdAt: string;
}

export interface TreeView {
  nodes: NodeView[];
  path: NodeId[];
  cursors: Record<string, NodeId>;
  roots: NodeId[];
  head: NodeId | null;
  usage: Usage;
}

export interface RunView {
  id: string;
  sessionId: string;
  kind: RunKind;
  status: RunStatus;
  error?: { code: string; message: string };
  usage: Usage;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface LiveEntryView {
  id: string;
  title: string | null;
  status: SessionInfo['status'];
  userId: string | null;
  controllers: number;
  observers: number;
  since: string;
  where: { api: string[]; worker: string | null };
}
