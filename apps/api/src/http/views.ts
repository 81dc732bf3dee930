// Response bodies of the API, mapped from domain records (Prisma and store types never reach a response).

import { emptyUsage, type ActivityEvent, type InFlight, type SessionInfo, type TreeNode } from '@canopy/core';
import type { LiveEntry } from '@canopy/realtime';
import type { QueuedRunRecord, RunRecord, SessionRecord } from '@canopy/store';
import { toSessionInfo } from '@canopy/session';

export function sessionView(record: SessionRecord): SessionInfo {
  return toSessionInfo(record);
}

export function sessionDetailView(
  record: SessionRecord,
  live: { controllers: number; observers: number } | null,
  inFlight: InFlight | null,
) {
  return {
    ...toSessionInfo(record),
    head: record.head,
    path: record.path,
    usage: record.usage,
    ...(live ? { live } : {}),
    ...(inFlight
      ? {
          inFlight: {
            runId: inFlight.runId,
            pending: inFlight.pending,
            partial: inFlight.partial,
            awaiting: inFlight.awaiting,
          },
        }
      : {}),
  };
}

/** A node as the API shows it; `createdAt` is when its message was produced. */
export function nodeView(node: TreeNode) {
  return {
    id: node.id,
    parentId: node.parentId,
    message: node.message,
    usage: node.usage,
    createdAt: new Date(node.message.timestamp).toISOString(),
  };
}

export function runView(run: RunRecord) {
  return {
    id: run.id,
    sessionId: run.sessionId,
    kind: run.kind,
    status: run.status,
    ...(run.error ? { error: run.error } : {}),
    usage: run.usage ?? emptyUsage(),
    /** Executions so far: more than one when a run was taken over after its worker died or handed it back. */
    attempts: run.attempts,
    /** Who started the run; null for runs recorded before actors were. */
    actor: run.actor,
    startedAt: run.startedAt?.toISOString() ?? null,
    finishedAt: run.finishedAt?.toISOString() ?? null,
  };
}

/**
 * A prompt waiting in its session's queue, as a run that has not started: its place in the queue (1: next) and
 * how it was queued.
 */
export function queuedRunView(entry: QueuedRunRecord) {
  return {
    id: entry.id,
    sessionId: entry.sessionId,
    kind: 'prompt' as const,
    status: 'queued' as const,
    position: entry.position,
    mode: entry.mode,
    usage: emptyUsage(),
    attempts: 0,
    actor: entry.actor,
    startedAt: null,
    finishedAt: null,
  };
}

export function liveView(entry: LiveEntry) {
  return {
    id: entry.id,
    title: entry.title,
    status: entry.status,
    userId: entry.userId,
    controllers: entry.controllers,
    observers: entry.observers,
    since: entry.since,
    where: entry.where,
  };
}

/** An activity event as both the SSE feed and the WebSocket `activity` frame carry it. */
export function activityView(event: ActivityEvent) {
  return { tenantId: event.tenantId, ...event.data, at: event.at };
}
