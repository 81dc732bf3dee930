// Who acts: every command, repository call, tool handler and hook receives a Scope. Work driven by timers or
// recovery runs under the system scope of the session's tenant. Never persisted.

export interface Scope {
  readonly tenantId: string;
  /** Set for an end-user token: the scope then reaches only that user's sessions. */
  readonly userId?: string;
  readonly roles: readonly string[];
  /** True for timeout- and recovery-driven work, which acts for the tenant with no user. */
  readonly system: boolean;
}

export function tenantScope(
  tenantId: string,
  opts: { userId?: string; roles?: readonly string[] } = {},
): Scope {
  if (!tenantId) throw new Error('a scope needs a tenant id');
  return Object.freeze({
    tenantId,
    ...(opts.userId !== undefined ? { userId: opts.userId } : {}),
    roles: Object.freeze([...(opts.roles ?? [])]),
    system: false,
  });
}

export function systemScope(tenantId: string): Scope {
  if (!tenantId) throw new Error('a scope needs a tenant id');
  return Object.freeze({ tenantId, roles: Object.freeze(['system']), system: true });
}
