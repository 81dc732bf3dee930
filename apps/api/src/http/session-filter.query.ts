// The list filters of GET routes (list, search, count, export) from their query: the validated parameters, plus
// `metadata.<key>=<value>` (every key must match) and `metadataAny.<key>=<value>` (repeatable: any value of a key
// matches), which no schema can name in advance. Also the JSON form bulk operations send.

import type { Request } from 'express';
import { CanopyException } from '@canopy/common';
import type { SessionFilterRequest, SessionStatus } from '@canopy/core';
import type { CatalogFilter } from '@canopy/manager';

const MAX_METADATA_FILTERS = 16;

export interface FilterQuery {
  userId?: string | undefined;
  live?: 'true' | 'false' | undefined;
  model?: string | undefined;
  status?: string | undefined;
  pinned?: 'true' | 'false' | undefined;
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
  updatedAfter?: string | undefined;
  updatedBefore?: string | undefined;
}

export function filterFromQuery(query: FilterQuery, req: Request): CatalogFilter {
  const metadata: Record<string, string> = {};
  const metadataAny: Record<string, string[]> = {};
  for (const [key, value] of Object.entries(req.query)) {
    const any = key.startsWith('metadataAny.');
    if (!any && !key.startsWith('metadata.')) continue;
    const name = key.slice(any ? 'metadataAny.'.length : 'metadata.'.length);
    const values = any && Array.isArray(value) ? value : [value];
    if (
      !name ||
      name.length > 100 ||
      values.length > 50 ||
      !values.every((v): v is string => typeof v === 'string' && v.length <= 1_000)
    ) {
      throw CanopyException.badRequest(`invalid metadata filter "${key}"`, { field: key });
    }
    if (any) metadataAny[name] = values;
    else metadata[name] = values[0]!;
  }
  if (Object.keys(metadata).length + Object.keys(metadataAny).length > MAX_METADATA_FILTERS) {
    throw CanopyException.badRequest(`at most ${MAX_METADATA_FILTERS} metadata filters`, {
      field: 'metadata',
    });
  }
  return {
    ...(query.userId !== undefined ? { userId: query.userId } : {}),
    ...(query.live !== undefined ? { live: query.live === 'true' } : {}),
    ...(query.model !== undefined ? { model: query.model } : {}),
    ...(query.status !== undefined ? { status: query.status.split(',') as SessionStatus[] } : {}),
    ...(query.pinned !== undefined ? { pinned: query.pinned === 'true' } : {}),
    ...dates(query),
    ...(Object.keys(metadata).length ? { metadata } : {}),
    ...(Object.keys(metadataAny).length ? { metadataAny } : {}),
  };
}

/** The JSON filter of a bulk operation (its words, `q`, travel beside it). */
export function filterFromBody(filter: SessionFilterRequest): CatalogFilter {
  const { q: _q, createdAfter, createdBefore, updatedAfter, updatedBefore, ...rest } = filter;
  return { ...rest, ...dates({ createdAfter, createdBefore, updatedAfter, updatedBefore }) };
}

function dates(q: Pick<FilterQuery, 'createdAfter' | 'createdBefore' | 'updatedAfter' | 'updatedBefore'>) {
  const out: Partial<Record<'createdAfter' | 'createdBefore' | 'updatedAfter' | 'updatedBefore', Date>> = {};
  for (const key of ['createdAfter', 'createdBefore', 'updatedAfter', 'updatedBefore'] as const) {
    const value = q[key];
    if (value !== undefined) out[key] = new Date(value);
  }
  return out;
}
