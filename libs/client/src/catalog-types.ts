// The shapes of finding, forking, moving and expiring sessions (search hits, bulk results, import reports,
// retention), on the shared types of @canopy/core.

import type { SessionInfo, SessionStatus } from '@canopy/core';

/** The list filters, shared by list, search, count, export and the bulk operations. */
export interface SessionFilter {
  userId?: string;
  /** Only sessions live somewhere in the deployment (true), or only those that are not (false). */
  live?: boolean;
  model?: string;
  status?: SessionStatus[];
  pinned?: boolean;
  /** Every key must match its value (`metadata.<key>=<value>`). */
  metadata?: Record<string, string>;
  /** Every key must match one of its values (`metadataAny.<key>=<value>`, repeated). */
  metadataAny?: Record<string, string[]>;
  /** ISO 8601 times (or Dates): created / updated at or after, before. */
  createdAfter?: string | Date;
  createdBefore?: string | Date;
  updatedAfter?: string | Date;
  updatedBefore?: string | Date;
}

export interface SearchQuery extends SessionFilter {
  limit?: number;
  cursor?: string;
}

export interface SearchHit {
  session: SessionInfo;
  /** The best matching message's rank; higher is better. */
  rank: number;
  /** The matching messages' node ids, best first (at most 20). */
  nodeIds: number[];
  /** Matching messages in all. */
  matches: number;
  /** The best matching message, cut around the matches; highlights are [start, end) offsets in text. */
  snippet: { nodeId: number; text: string; highlights: Array<[number, number]> };
}

export interface ForkInput {
  /** The last node of the fork (default: the active path's tip). */
  nodeId?: number | null;
  title?: string | null;
  metadata?: Record<string, string | number | boolean | null>;
  userId?: string;
}

export type ExportFormat = 'canopy' | 'openai' | 'anthropic' | 'markdown';
export type ImportFormat = 'canopy' | 'openai' | 'anthropic' | 'chatgpt';

export interface ImportInput {
  format: ImportFormat;
  data: unknown;
  userId?: string;
  metadata?: Record<string, string | number | boolean | null>;
  model?: string;
}

export type ImportLineReport =
  | { line: number; ok: true; id: string; nodes: number }
  | { line: number; ok: false; error: { code: string; message: string; field?: string } };

export interface ImportManyResult {
  reports: ImportLineReport[];
  imported: number;
  failed: number;
}

/** Which sessions a bulk call acts on: these ids, or those matching a filter (and words `q`). */
/**
 * Sessions a bulk call acts on: ids, or a filter. A filter that narrows nothing (`{}`) is refused unless `all: true`
 * says every session is meant.
 */
export type BulkTarget =
  | { ids: string[] }
  | { filter: SessionFilter & { q?: string }; limit?: number; all?: true }
  | { all: true; limit?: number };

export interface BulkDeleteResult {
  deleted: number;
  ids: string[];
  /** The filter matched more than one call deletes (500 at most): call again. */
  more: boolean;
}

export interface BulkCancelResult {
  cancelled: number;
  runIds: string[];
  more: boolean;
}

export interface RetentionPolicy {
  /** Sessions not updated for this many days are deleted; null: kept forever. */
  deleteAfterDays: number | null;
  /** `pinned` (default): pinned sessions are kept; `none`: nothing is. */
  keep?: 'none' | 'pinned';
}

/** A tenant with its retention policy (GET /v1/admin/tenants/:id). */
export interface TenantDetail {
  id: string;
  name: string;
  createdAt: string;
  disabled: boolean;
  disabledAt: string | null;
  retention: Required<RetentionPolicy>;
}
