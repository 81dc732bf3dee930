// The audit log's writing side. Who acts is known per request (the api's guard fills it in the request's
// AuditContext); every transaction opened while serving that request declares it (canopy.audit, base64 JSON, so
// it can be spliced into the first round trip safely), which is what the session-deletion trigger records. The
// repositories of management actions insert their audit event themselves, in the same transaction as the change.

import { AsyncLocalStorage } from 'node:async_hooks';
import type { SqlTx, Tx } from './database';
import type { Prisma } from './generated/prisma/client';

export type AuditActor =
  { type: 'key'; keyId: string } | { type: 'user'; userId: string } | { type: 'admin' } | { type: 'system' };

export interface AuditContext {
  actor: AuditActor;
  requestId: string | null;
}

/** The audit context of the request being served (mutable: the guard fills it once it knows the caller). */
export interface AuditHolder {
  context?: AuditContext;
  requestId?: string | null;
}

const storage = new AsyncLocalStorage<AuditHolder>();

/** Runs fn (a request's handling) with a holder the guard fills. */
export function runWithAuditHolder<T>(holder: AuditHolder, fn: () => T): T {
  return storage.run(holder, fn);
}

/** The current request's audit context, or the system's outside requests. */
export function currentAudit(): AuditContext {
  const holder = storage.getStore();
  return holder?.context ?? { actor: { type: 'system' }, requestId: holder?.requestId ?? null };
}

/** set_config of the current audit context, as trusted SQL text (base64 only), or '' outside requests. */
export function auditSetting(): string {
  const context = storage.getStore()?.context;
  if (!context) return '';
  const encoded = Buffer.from(JSON.stringify(context), 'utf8').toString('base64');
  return `, set_config('canopy.audit', '${encoded}', true)`;
}

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

/** Declares the current request's actor (the api's guard, once it knows the caller). */
export function setAuditContext(context: AuditContext): void {
  const holder = storage.getStore();
  if (holder) holder.context = context;
}
