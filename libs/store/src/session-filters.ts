// The filters that listing, counting, searching, exporting and bulk operations share, as SQL conditions on the
// `sessions` table: the tenant (always), the scope's user, and what the caller asked for. Every value is bound as a
// parameter; metadata keys too (they are user strings).

import type { Scope, SessionStatus } from '@canopy/core';
import { sql, type Sql } from './sql';

export interface SessionFilter {
  userId?: string;
  /** Every key must match: metadata->>key = value (text comparison). */
  metadata?: Record<string, string>;
  /** Every key must match one of its values (OR within a key, AND across keys). */
  metadataAny?: Record<string, string[]>;
  model?: string;
  status?: SessionStatus[];
  pinned?: boolean;
  createdAfter?: Date;
  createdBefore?: Date;
  updatedAfter?: Date;
  updatedBefore?: Date;
  /** Only these sessions (the live filter, resolved from the live registry; bulk operations by id). */
  ids?: string[];
  /** None of these sessions. */
  excludeIds?: string[];
}

/** The conditions on `sessions` for a scope and a filter; the tenant always comes first. */
export function filterConditions(scope: Scope, filter: SessionFilter = {}): Sql[] {
  const conditions: Sql[] = [sql`sessions.tenant_id = ${scope.tenantId}::uuid`];
  // A session with no user (user_id NULL) never equals a user: invisible to user scopes, as it should be.
  if (scope.userId !== undefined) conditions.push(sql`sessions.user_id = ${scope.userId}::text`);
  if (filter.userId !== undefined) conditions.push(sql`sessions.user_id = ${filter.userId}::text`);
  // `->>` keeps the text comparison (a stored number 5 matches "5"), which the jsonb_path_ops index (`@>`)
  // could not.
  for (const [key, value] of Object.entries(filter.metadata ?? {})) {
    conditions.push(sql`sessions.metadata ->> ${key}::text = ${value}::text`);
  }
  for (const [key, values] of Object.entries(filter.metadataAny ?? {})) {
    conditions.push(sql`sessions.metadata ->> ${key}::text = ANY(${values}::text[])`);
  }
  if (filter.model !== undefined) conditions.push(sql`sessions.model = ${filter.model}::text`);
  if (filter.status?.length) conditions.push(sql`sessions.status::text = ANY(${filter.status}::text[])`);
  if (filter.pinned !== undefined) conditions.push(sql`sessions.pinned = ${filter.pinned}::boolean`);
  if (filter.createdAfter) conditions.push(sql`sessions.created_at >= ${filter.createdAfter}::timestamptz`);
  if (filter.createdBefore) conditions.push(sql`sessions.created_at < ${filter.createdBefore}::timestamptz`);
  if (filter.updatedAfter) conditions.push(sql`sessions.updated_at >= ${filter.updatedAfter}::timestamptz`);
  if (filter.updatedBefore) conditions.push(sql`sessions.updated_at < ${filter.updatedBefore}::timestamptz`);
  if (filter.ids) conditions.push(sql`sessions.id = ANY(${filter.ids}::text[])`);
  if (filter.excludeIds?.length) conditions.push(sql`sessions.id <> ALL(${filter.excludeIds}::text[])`);
  return conditions;
}
