// Who acts, per request: the api's guard learns the caller and declares it here, in the request's async context;
// everything that runs while serving the request reads it (the database declares it to every transaction, the
// audit log records it). Outside requests (timers, recovery) the system acts.

import { AsyncLocalStorage } from 'node:async_hooks';

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

/** Declares the current request's actor (the api's guard, once it knows the caller). */
export function setAuditContext(context: AuditContext): void {
  const holder = storage.getStore();
  if (holder) holder.context = context;
}

/** The caller the current request declared, if any (undefined outside requests and before the guard). */
export function declaredAudit(): AuditContext | undefined {
  return storage.getStore()?.context;
}

/** The current request's audit context, or the system's outside requests. */
export function currentAudit(): AuditContext {
  const holder = storage.getStore();
  return holder?.context ?? { actor: { type: 'system' }, requestId: holder?.requestId ?? null };
}
