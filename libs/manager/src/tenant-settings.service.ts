// A tenant's settings (GET / PUT /v1/settings): the defaults its new sessions take. A change is checked as a
// session's own options are (the context policy's summaryModel must be a model the tenant can use, each default MCP
// server one of the tenant's servers), then stored and audited by the tenancy feature. Only sessions created afterwards take a changed default.

import { CanopyException } from '@canopy/common';
import type { Scope, TenantSettingsRequest, TenantSettingsView } from '@canopy/core';
import type { TenantSettingsRepository } from '@canopy/tenancy';
import { checkModelFor, type SessionEngineDeps } from '@canopy/session';

export class TenantSettingsService {
  constructor(
    private readonly deps: Pick<SessionEngineDeps, 'gateway' | 'providerKeys' | 'tools'>,
    private readonly settings: TenantSettingsRepository,
  ) {}

  get(scope: Scope): Promise<TenantSettingsView> {
    return this.settings.get(scope);
  }

  /** Replaces the defaults the request names (null removes one); the others stay. */
  async update(scope: Scope, request: TenantSettingsRequest): Promise<TenantSettingsView> {
    const summaryModel = request.context?.summaryModel;
    if (summaryModel) await checkModelFor(this.deps, scope.tenantId, summaryModel, 'context.summaryModel');
    if (request.mcpServers?.length) {
      const known = await this.deps.tools.mcpServerNames(scope.tenantId);
      request.mcpServers.forEach((name, i) => {
        if (!known.has(name)) {
          throw CanopyException.badRequest(`unknown MCP server "${name}" (POST /v1/mcp-servers adds one)`, {
            field: `mcpServers.${i}`,
          });
        }
      });
    }
    return this.settings.update(scope, request);
  }
}
