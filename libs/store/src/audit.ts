// The audit log's writing side. Who acts is known per request (@canopy/common's acting context, filled by the api's
// guard); every transaction opened while serving that request declares it (Database: canopy.audit), which is what
// the session-deletion trigger records. The repositories of management actions insert their audit event
// themselves, in the same transaction as the change.

import { currentAudit, type AuditContext } from '@canopy/common';
import type { SqlTx, Tx } from './database';
import type { Prisma } from './generated/prisma/client';

export interface AuditEntry {
  tenantId: string;
  action: string;
  targetType: string;
  targetId?: string | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/** Inserts an audit event in the caller's transaction (the action's), as the current request's actor. */
export async function writeAudit(tx: SqlTx, entry: AuditEntry, context: AuditContext = currentAudit()) {
  await tx.query(
    `INSERT INTO audit_events (tenant_id, actor, action, target_type, target_id, request_id, before, after)
     VALUES ($1::uuid, $2::jsonb, $3, $4, $5, $6, $7::jsonb, $8::jsonb)`,
    [
      entry.tenantId,
      JSON.stringify(context.actor),
      entry.action,
      entry.targetType,
      entry.targetId ?? null,
      context.requestId,
      entry.before ? JSON.stringify(entry.before) : null,
      entry.after ? JSON.stringify(entry.after) : null,
    ],
  );
}

/** writeAudit on a Prisma transaction (the typed client's road). */
export async function writeAuditPrisma(tx: Tx, entry: AuditEntry, context: AuditContext = currentAudit()) {
  const json = (value: object) => value as Prisma.InputJsonObject;
  await tx.auditEvent.create({
    data: {
      tenantId: entry.tenantId,
      actor: json(context.actor),
      action: entry.action,
      targetType: entry.targetType,
      targetId: entry.targetId ?? null,
      requestId: context.requestId,
      ...(entry.before ? { before: json(entry.before) } : {}),
      ...(entry.after ? { after: json(entry.after) } : {}),
    },
  });
}
