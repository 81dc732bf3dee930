// Reading the audit log: a tenant's own events, or (the admin) any tenant's or all, newest first, filtered by
// action prefix, target and time, a page at a time (keyset on created_at, id).

import { Injectable } from '@nestjs/common';
import type { Scope } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import {
  Database,
  join,
  query,
  raw,
  sql,
  writeAudit,
  type AuditEntry,
  type Sql,
  type SqlTx,
} from '@canopy/store';

export interface AuditEventView {
  id: string;
  tenantId: string;
  actor: Record<string, unknown>;
  action: string;
  targetType: string;
  targetId: string | null;
  requestId: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  createdAt: string;
}

export interface AuditFilter {
  action?: string;
  targetType?: string;
  targetId?: string;
  from?: Date;
  to?: Date;
  limit: number;
  cursor?: string;
}

interface Row {
  id: string;
  tenant_id: string;
  actor: Record<string, unknown>;
  action: string;
  target_type: string;
  target_id: string | null;
  request_id: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  created_at: Date;
}

@Injectable()
export class AuditRepository {
  constructor(private readonly db: Database) {}

  /** Records an action that writes nothing else (token issuance), in a transaction of its own. */
  record(entry: AuditEntry): Promise<void> {
    return this.db.withTenantSql({ tenantId: entry.tenantId }, (tx) => writeAudit(tx, entry));
  }

  /** The events of the scope's tenant. */
  listForTenant(scope: Pick<Scope, 'tenantId'>, filter: AuditFilter) {
    return this.db.withTenantSql(scope, (tx) => this.page(tx, filter, scope.tenantId));
  }

  /** The admin's view: one tenant's events or every tenant's. */
  listForAdmin(tenantId: string | undefined, filter: AuditFilter) {
    return this.db.withAdminSql('audit log (admin route)', (tx) => this.page(tx, filter, tenantId));
  }

  private async page(
    tx: SqlTx,
    filter: AuditFilter,
    tenantId: string | undefined,
  ): Promise<{ data: AuditEventView[]; nextCursor: string | null }> {
    const where: Sql[] = [];
    if (tenantId) where.push(sql`tenant_id = ${tenantId}::uuid`);
    if (filter.action) where.push(sql`starts_with(action, ${filter.action}::text)`);
    if (filter.targetType) where.push(sql`target_type = ${filter.targetType}::text`);
    if (filter.targetId) where.push(sql`target_id = ${filter.targetId}::text`);
    if (filter.from) where.push(sql`created_at >= ${filter.from}::timestamptz`);
    if (filter.to) where.push(sql`created_at < ${filter.to}::timestamptz`);
    if (filter.cursor) {
      const c = decodeCursor(filter.cursor);
      where.push(sql`(created_at, id) < (${c.at}::timestamptz, ${c.id}::uuid)`);
    }
    const rows = await query<Row>(
      tx,
      sql`SELECT id::text AS id, tenant_id::text AS tenant_id, actor, action, target_type, target_id, request_id,
                 before, after, created_at
            FROM audit_events
           ${where.length ? sql`WHERE ${join(where, ' AND ')}` : raw('')}
           ORDER BY created_at DESC, id DESC
           LIMIT ${filter.limit + 1}::int`,
    );
    const more = rows.length > filter.limit;
    const data = (more ? rows.slice(0, filter.limit) : rows).map(toView);
    const last = data[data.length - 1];
    return { data, nextCursor: more && last ? encodeCursor(last.createdAt, last.id) : null };
  }
}

function toView(r: Row): AuditEventView {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    actor: r.actor,
    action: r.action,
    targetType: r.target_type,
    targetId: r.target_id,
    requestId: r.request_id,
    before: r.before,
    after: r.after,
    createdAt: r.created_at.toISOString(),
  };
}

function encodeCursor(at: string, id: string): string {
  return Buffer.from(JSON.stringify([at, id]), 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { at: string; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (
      typeof at === 'string' &&
      !Number.isNaN(Date.parse(at)) &&
      typeof id === 'string' &&
      /^[0-9a-f-]{36}$/i.test(id)
    )
      return { at, id };
  } catch {
    // falls through
  }
  throw CanopyException.badRequest('invalid cursor', { field: 'cursor' });
}
