// The population of a tenant's sessions, beside SessionManager: search and count with the list
// filters, fork, and bulk delete and cancel. Forks and bulk deletes are heavy operations of their tenant's (a few in
// flight at most: heavy-operations.ts). Bulk operations are capped per call and answer what they did; each
// session goes through the same steps as its single-session command (a busy session's run is stopped before it
// is deleted, a live one closed everywhere). A bulk cancel asked for by a tenant is audited once (each deletion is
// audited with its row, by a trigger).

import { CanopyException } from '@canopy/common';
import type { Scope, SessionInfo } from '@canopy/core';
import type { RunControl } from '@canopy/queue';
import type { EventBus, LiveRegistry } from '@canopy/realtime';
import type { SearchHit, SessionCatalogStore } from '@canopy/store';
import type { AuditService } from '@canopy/tenancy';
import { toSessionInfo, type SessionService } from '@canopy/session';
import type { SessionManager } from '../session-manager.service';
import { mapLimit, resolveFilter, type CatalogFilter } from './catalog-filter';
import type { HeavyOperations } from './heavy-operations';

/** Sessions one bulk call acts on at most. */
export const BULK_LIMIT = 500;

export interface SearchResult {
  data: Array<Omit<SearchHit, 'session'> & { session: SessionInfo }>;
  nextCursor: string | null;
}

/** Which sessions a bulk operation acts on: these ids, or those matching a filter (and words). */
export type BulkTarget = { ids: string[] } | { filter: CatalogFilter; q?: string; limit?: number };

export interface ForkRequest {
  nodeId?: number | null;
  title?: string | null;
  metadata?: Record<string, unknown>;
  userId?: string;
}

export class SessionCatalogService {
  constructor(
    private readonly manager: SessionManager,
    private readonly sessions: SessionService,
    private readonly catalog: SessionCatalogStore,
    private readonly registry: LiveRegistry,
    private readonly bus: EventBus,
    private readonly control: RunControl,
    private readonly heavy: HeavyOperations,
    private readonly audit: AuditService,
  ) {}

  async search(
    scope: Scope,
    input: { q: string; filter: CatalogFilter; limit: number; cursor: string | null },
  ): Promise<SearchResult> {
    const filter = await resolveFilter(scope, input.filter, this.registry);
    if (!filter) return { data: [], nextCursor: null };
    const page = await this.catalog.search(scope, { ...input, filter });
    return {
      data: page.data.map(({ session, ...hit }) => ({ ...hit, session: toSessionInfo(session) })),
      nextCursor: page.nextCursor,
    };
  }

  async count(scope: Scope, input: { q?: string; filter: CatalogFilter }): Promise<number> {
    const filter = await resolveFilter(scope, input.filter, this.registry);
    if (!filter) return 0;
    return this.catalog.count(scope, { filter, ...(input.q !== undefined ? { q: input.q } : {}) });
  }

  /** A new session: the source's path up to the node (default its active tip); metadata.forkedFrom names it. */
  async fork(scope: Scope, sessionId: string, input: ForkRequest): Promise<SessionInfo> {
    return this.heavy.run(scope, 'fork', () => this.forkNow(scope, sessionId, input));
  }

  private async forkNow(scope: Scope, sessionId: string, input: ForkRequest): Promise<SessionInfo> {
    const forked = await this.catalog.fork(scope, {
      sessionId,
      ...(input.nodeId !== undefined ? { nodeId: input.nodeId } : {}),
      ...(input.title !== undefined ? { title: input.title } : {}),
      ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
      ...(input.userId !== undefined ? { userId: input.userId } : {}),
    });
    if (!forked.ok) {
      throw forked.reason === 'not_found'
        ? CanopyException.notFound('session')
        : CanopyException.notFound('node');
    }
    return toSessionInfo(forked.session);
  }

  /** Deletes the target's sessions (at most BULK_LIMIT); `more`: the filter matched more than were deleted. */
  deleteMany(scope: Scope, target: BulkTarget): Promise<{ deleted: number; ids: string[]; more: boolean }> {
    return this.heavy.run(scope, 'delete', () => this.deleteNow(scope, target));
  }

  private async deleteNow(
    scope: Scope,
    target: BulkTarget,
  ): Promise<{ deleted: number; ids: string[]; more: boolean }> {
    const { targets, more } = await this.select(scope, target);
    const busy = targets.filter((t) => t.status === 'busy').map((t) => t.id);
    const rest = targets.filter((t) => t.status !== 'busy').map((t) => t.id);
    // A busy session goes the single delete's way: its run is stopped wherever it executes first.
    const deletedBusy = await mapLimit(busy, 8, (id) =>
      this.manager.delete(scope, id).then(
        () => id,
        () => null,
      ),
    );
    await Promise.all(rest.map((id) => this.control.closeEverywhere(scope.tenantId, id, 'delete')));
    const deletedRest = await this.catalog.deleteIdle(scope, rest);
    await Promise.all(deletedRest.map((id) => this.bus.forget(scope.tenantId, id)));
    const ids = [...deletedBusy.filter((id): id is string => id !== null), ...deletedRest];
    return { deleted: ids.length, ids, more };
  }

  /**
   * The bulk cancel a tenant asks for: cancelMany, recorded in the audit log once when it cancelled anything (it
   * stops runs in many processes; the first 50 run ids are named).
   */
  async cancelManyAudited(
    scope: Scope,
    target: BulkTarget,
  ): Promise<{ cancelled: number; runIds: string[]; more: boolean }> {
    const done = await this.cancelMany(scope, target);
    if (done.cancelled > 0) {
      await this.audit.record({
        tenantId: scope.tenantId,
        action: 'session.bulk_cancel',
        targetType: 'run',
        after: { cancelled: done.cancelled, runIds: done.runIds.slice(0, 50), more: done.more },
      });
    }
    return done;
  }

  /** Cancels the runs in flight (busy or paused) of the target's sessions; answers the runs cancelled. */
  async cancelMany(
    scope: Scope,
    target: BulkTarget,
  ): Promise<{ cancelled: number; runIds: string[]; more: boolean }> {
    const narrowed: BulkTarget =
      'ids' in target ? target : { ...target, filter: { ...target.filter, status: ['busy', 'paused'] } };
    const { targets, more } = await this.select(scope, narrowed);
    const inFlight = targets.filter((t) => t.status !== 'idle');
    const runIds = await mapLimit(inFlight, 8, (t) =>
      this.sessions.cancel(scope, t.id).then(
        (r) => r.runId,
        (err: unknown) => {
          // Ended on its own meanwhile: nothing to cancel.
          if (err instanceof CanopyException && (err.code === 'idle' || err.code === 'not_found'))
            return null;
          throw err;
        },
      ),
    );
    const cancelled = runIds.filter((id): id is string => id !== null);
    return { cancelled: cancelled.length, runIds: cancelled, more };
  }

  private async select(scope: Scope, target: BulkTarget) {
    if ('ids' in target) {
      const ids = [...new Set(target.ids)].slice(0, BULK_LIMIT);
      return { targets: await this.catalog.select(scope, { ids }, ids.length), more: false };
    }
    const limit = Math.min(BULK_LIMIT, target.limit ?? BULK_LIMIT);
    const filter = await resolveFilter(scope, target.filter, this.registry);
    if (!filter) return { targets: [], more: false };
    const found = await this.catalog.select(scope, filter, limit + 1, target.q);
    return { targets: found.slice(0, limit), more: found.length > limit };
  }
}
