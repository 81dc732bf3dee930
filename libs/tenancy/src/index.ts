// @canopy/tenancy: the tenant-operations features, one folder each with its service and repository: tenants and
// their API keys, the audit log, webhooks (endpoints, the outbox and its sender), quotas with usage and run
// statistics, a tenant's own provider keys, its MCP servers, its settings (its new sessions' defaults), and
// retention. Above the store, below auth, agent and session (which read tenants, keys, quotas, provider keys and
// settings through it); what its use cases need from higher layers comes through the ports it declares
// (CredentialChanges, TenantRuns).

export * from './caller';
export * from './tenancy.module';
export * from './tenants/api-keys';
export * from './tenants/api-keys.service';
export * from './tenants/credential-changes.port';
export * from './tenants/tenant-runs.port';
export * from './tenants/tenants.repository';
export * from './tenants/tenants.service';
export * from './audit/audit.repository';
export * from './audit/audit.service';
export * from './webhooks/webhook-dispatcher';
export * from './webhooks/webhook-sender';
export * from './webhooks/webhooks.repository';
export * from './webhooks/webhooks.service';
export * from './quotas/quota-overview';
export * from './quotas/quotas.repository';
export * from './quotas/quotas.service';
export * from './quotas/run-stats.repository';
export * from './quotas/run-stats.service';
export * from './quotas/usage-window';
export * from './provider-keys/provider-keys.repository';
export * from './provider-keys/provider-keys.service';
export * from './retention/retention.repository';
export * from './mcp-servers/mcp-servers.repository';
export * from './mcp-servers/mcp-servers.service';
export * from './settings/tenant-settings.repository';
