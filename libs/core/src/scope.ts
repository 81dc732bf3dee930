// Who acts: every command, repository call, tool handler and hook receives a Scope. Work driven by timers or
// recovery runs under the system scope of the session's tenant. A Scope is never persisted; the Actor it stands
// for is (a run records who started it, a decision who took it), and turns back into the same Scope.

export interface Scope {
  readonly tenantId: string;
  /** Set for an end-user token: the scope then reaches only that user's sessions. */
  readonly userId?: string;
  /** The tenant API key acting (a key's scope; absent for a user token and the system). */
  readonly keyId?: string;
  readonly roles: readonly string[];
  /** True for timeout- and recovery-driven work, which acts for the tenant with no user. */
  readonly system: boolean;
}

/** Who a scope acts for, as a run records it: a tenant API key, an end user (token), the admin, the system. */
export type Actor =
  { type: 'key'; keyId: string } | { type: 'user'; userId: string } | { type: 'admin' } | { type: 'system' };

export function tenantScope(
  tenantId: string,
  opts: { userId?: string; keyId?: string; roles?: readonly string[] } = {},
): Scope {
  if (!tenantId) throw new Error('a scope needs a tenant id');
  return Object.freeze({
    tenantId,
    ...(opts.userId !== undefined ? { userId: opts.userId } : {}),
    ...(opts.keyId !== undefined && opts.userId === undefined ? { keyId: opts.keyId } : {}),
    roles: Object.freeze([...(opts.roles ?? [])]),
    system: false,
  });
}

export function systemScope(tenantId: string): Scope {
  if (!tenantId) throw new Error('a scope needs a tenant id');
  return Object.freeze({ tenantId, roles: Object.freeze(['system']), system: true });
}

/** The actor a scope stands for (a user wins over a key; a scope with neither acts as the admin). */
export function actorOf(scope: Scope): Actor {
  if (scope.system) return { type: 'system' };
  if (scope.userId !== undefined) return { type: 'user', userId: scope.userId };
  if (scope.keyId !== undefined) return { type: 'key', keyId: scope.keyId };
  return { type: 'admin' };
}

/** The scope an actor acts in inside a tenant: the inverse of actorOf. */
export function scopeOfActor(tenantId: string, actor: Actor): Scope {
  switch (actor.type) {
    case 'system':
      return systemScope(tenantId);
    case 'user':
      return tenantScope(tenantId, { userId: actor.userId });
    case 'key':
      return tenantScope(tenantId, { keyId: actor.keyId });
    case 'admin':
      return tenantScope(tenantId, { roles: ['admin'] });
  }
}

/** An Actor read back from stored JSON; null for anything else (runs recorded before actors were). */
export function parseActor(value: unknown): Actor | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  switch (v.type) {
    case 'system':
      return { type: 'system' };
    case 'admin':
      return { type: 'admin' };
    case 'user':
      return typeof v.userId === 'string' ? { type: 'user', userId: v.userId } : null;
    case 'key':
      return typeof v.keyId === 'string' ? { type: 'key', keyId: v.keyId } : null;
    default:
      return null;
  }
}
