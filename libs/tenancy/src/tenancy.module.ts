// The tenant-operations features for a deployable. forRoot(): each feature's repository and the services that need
// nothing above this layer, one module per process however many import it (auth, agent, session and manager read
// tenants, keys, quotas, provider keys and retention through it). forApi(ports): the tenant and key use cases
// besides, with the ports they need from above (CREDENTIAL_CHANGES, TENANT_RUNS) provided by the given modules.

import { Module, type DynamicModule, type ModuleMetadata } from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { Database, SecretBox, StoreModule, resolveEncryptionKey } from '@canopy/store';
import { AuditRepository } from './audit/audit.repository';
import { AuditService } from './audit/audit.service';
import { ProviderKeysRepository } from './provider-keys/provider-keys.repository';
import { ProviderKeysService } from './provider-keys/provider-keys.service';
import { QuotasRepository } from './quotas/quotas.repository';
import { QuotasService } from './quotas/quotas.service';
import { RunStatsRepository } from './quotas/run-stats.repository';
import { RunStatsService } from './quotas/run-stats.service';
import { RetentionRepository } from './retention/retention.repository';
import { ApiKeysService } from './tenants/api-keys.service';
import { TenantsRepository } from './tenants/tenants.repository';
import { TenantsService } from './tenants/tenants.service';
import { WebhooksRepository } from './webhooks/webhooks.repository';
import { WebhooksService } from './webhooks/webhooks.service';
import { McpServersRepository } from './mcp-servers/mcp-servers.repository';
import { McpServersService } from './mcp-servers/mcp-servers.service';
import { TenantSettingsRepository } from './settings/tenant-settings.repository';

/** A repository built over the database alone. */
function repository<T>(type: new (db: Database) => T) {
  return { provide: type, inject: [Database], useFactory: (db: Database) => new type(db) };
}

const SHARED = [
  TenantsRepository,
  RetentionRepository,
  AuditRepository,
  AuditService,
  WebhooksRepository,
  WebhooksService,
  QuotasRepository,
  QuotasService,
  RunStatsRepository,
  RunStatsService,
  ProviderKeysRepository,
  ProviderKeysService,
  McpServersRepository,
  McpServersService,
  TenantSettingsRepository,
];

@Module({})
export class TenancyModule {
  private static root: DynamicModule | null = null;

  static forRoot(): DynamicModule {
    TenancyModule.root ??= {
      module: TenancyModule,
      imports: [StoreModule.forRoot()],
      providers: [
        repository(TenantsRepository),
        repository(RetentionRepository),
        repository(AuditRepository),
        repository(WebhooksRepository),
        repository(QuotasRepository),
        repository(RunStatsRepository),
        repository(TenantSettingsRepository),
        {
          // Provider keys a tenant brought (sealed under the deployment's encryption key).
          provide: ProviderKeysRepository,
          inject: [CANOPY_CONFIG, Database],
          useFactory: (c: CanopyConfig, db: Database) => {
            const resolved = resolveEncryptionKey(c);
            return new ProviderKeysRepository(db, resolved ? new SecretBox(resolved.key) : null);
          },
        },
        {
          // A tenant's MCP servers (their headers sealed under the same key as provider keys).
          provide: McpServersRepository,
          inject: [CANOPY_CONFIG, Database],
          useFactory: (c: CanopyConfig, db: Database) => {
            const resolved = resolveEncryptionKey(c);
            return new McpServersRepository(db, resolved ? new SecretBox(resolved.key) : null);
          },
        },
        AuditService,
        WebhooksService,
        McpServersService,
        QuotasService,
        RunStatsService,
        ProviderKeysService,
      ],
      exports: SHARED,
    };
    return TenancyModule.root;
  }

  /**
   * forRoot() with the tenant and key use cases, for the api. `ports.imports` are the modules that export the
   * ports those use cases need from above: CREDENTIAL_CHANGES and TENANT_RUNS.
   */
  static forApi(ports: { imports: NonNullable<ModuleMetadata['imports']> }): DynamicModule {
    return {
      module: TenancyModule,
      imports: [TenancyModule.forRoot(), ...ports.imports],
      providers: [TenantsService, ApiKeysService],
      exports: [TenantsService, ApiKeysService, TenancyModule.forRoot()],
    };
  }
}
