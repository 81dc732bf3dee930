// Records of the store -> the views the engine and its subscribers use.

import type { SessionInfo } from '@canopy/core';
import type { PositionRecord, SessionRecord } from '@canopy/store';
import type { Tree } from '@canopy/core';

export function toSessionInfo(r: SessionRecord): SessionInfo {
  return {
    id: r.id,
    title: r.title,
    model: r.model,
    system: r.system,
    opts: r.opts,
    tools: r.tools,
    metadata: r.metadata,
    userId: r.userId,
    status: r.status,
    pinned: r.pinned,
    context: r.contextMeter,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}

export function positionOf(tree: Tree): PositionRecord {
  // Only the cursors that say something are kept: a cursor at a parent's newest child is what extend does anyway.
  return { path: [...tree.path], cursors: tree.essentialCursors(), head: tree.head };
}
