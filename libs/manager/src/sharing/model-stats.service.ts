// What the runs and ratings say about the models and the users: the dashboard's per-model and per-user figures over
// a window of UTC days (default: the last 30), a tenant key's own, the admin's of every tenant or one.

import { CanopyException } from '@canopy/common';
import type { ModelStatsQuery, ModelStatsView } from '@canopy/core';
import { ModelStatsRepository } from './model-stats.repository';

const DAY_MS = 86_400_000;
/** The longest window, in days (two years: the rollup keeps every day). */
const MAX_DAYS = 731;

export type ModelStatsCaller = { kind: 'admin' } | { kind: 'tenant'; tenantId: string };

export class ModelStatsService {
  constructor(private readonly stats: ModelStatsRepository) {}

  async get(caller: ModelStatsCaller, query: ModelStatsQuery, now = new Date()): Promise<ModelStatsView> {
    if (caller.kind !== 'admin' && query.tenantId !== undefined && query.tenantId !== caller.tenantId)
      throw CanopyException.badRequest('tenantId is for the admin key', { field: 'tenantId' });
    const to = day(query.to ? new Date(query.to) : now);
    const from = day(query.from ? new Date(query.from) : new Date(Date.parse(to) - 29 * DAY_MS));
    if (from > to) throw CanopyException.badRequest('from must not be after to', { field: 'from' });
    if ((Date.parse(to) - Date.parse(from)) / DAY_MS + 1 > MAX_DAYS)
      throw CanopyException.badRequest(`a window of at most ${MAX_DAYS} days`, { field: 'from' });
    const tenantId = caller.kind === 'admin' ? (query.tenantId ?? null) : caller.tenantId;
    return {
      from,
      to,
      groupBy: query.groupBy,
      data: await this.stats.stats(tenantId, query.groupBy, from, to),
    };
  }
}

/** The UTC day of an instant, as YYYY-MM-DD. */
function day(at: Date): string {
  return at.toISOString().slice(0, 10);
}
