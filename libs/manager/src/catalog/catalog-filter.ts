// A caller's session filter as the store takes it: the `live` filter resolved from the live registry (the sessions
// live anywhere in the deployment), and a user scope's own rule (a filter naming another user matches nothing).

import type { Scope } from '@canopy/core';
import type { LiveRegistry } from '@canopy/realtime';
import type { SessionFilter } from '@canopy/store';

export interface CatalogFilter extends SessionFilter {
  /** Only sessions live somewhere in the deployment (true), or only those that are not (false). */
  live?: boolean;
}

/** The store's filter, or null when nothing can match. */
export async function resolveFilter(
  scope: Scope,
  filter: CatalogFilter,
  registry: LiveRegistry,
): Promise<SessionFilter | null> {
  const { live, ...rest } = filter;
  if (scope.userId !== undefined && rest.userId !== undefined && rest.userId !== scope.userId) return null;
  if (live === undefined) return rest;
  const liveIds = (await registry.list(scope.tenantId)).map((e) => e.id);
  if (live) return { ...rest, ids: rest.ids ? rest.ids.filter((id) => liveIds.includes(id)) : liveIds };
  return { ...rest, excludeIds: [...(rest.excludeIds ?? []), ...liveIds] };
}

/** Runs fn over items, at most `limit` at a time; answers the results in order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
