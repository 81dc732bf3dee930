// The port the tenants feature needs from the layer that holds the sessions as a population (the manager): cancel
// a tenant's runs in flight, a bounded batch at a time, wherever they execute. Declared here and implemented above
// (@canopy/manager), so imports point down only.

export interface TenantRuns {
  /** Cancels one batch of the tenant's runs in flight; `more`: some were left for another call. */
  cancelInFlight(tenantId: string): Promise<{ cancelled: number; more: boolean }>;
}

export const TENANT_RUNS = Symbol('TENANT_RUNS');
