// The agent's parts for a deployable: the model gateway (the configured providers, a tenant's own provider keys
// first), the server tools (the demo tools when DEMO_TOOLS is on) and the hooks, both registries the app may fill
// at start-up. AgentModule.forRoot() is one module per process however many import it.

import { Module, type DynamicModule } from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { ProviderKeysRepository, TenancyModule } from '@canopy/tenancy';
import { HookRegistry } from './hooks/hook-registry';
import { MODEL_GATEWAY } from './model/model-gateway.port';
import { createModelGateway } from './model/model.gateway';
import { TenantCredentialsGateway } from './model/tenant-credentials.gateway';
import { registerDemoTools } from './tools/demo-tools';
import { ToolRegistry } from './tools/tool-registry';

@Module({})
export class AgentModule {
  private static root: DynamicModule | null = null;

  static forRoot(): DynamicModule {
    AgentModule.root ??= {
      module: AgentModule,
      imports: [TenancyModule.forRoot()],
      providers: [
        {
          provide: MODEL_GATEWAY,
          inject: [CANOPY_CONFIG, ProviderKeysRepository],
          useFactory: (c: CanopyConfig, keys: ProviderKeysRepository) =>
            new TenantCredentialsGateway(createModelGateway(c), keys),
        },
        {
          provide: ToolRegistry,
          inject: [CANOPY_CONFIG],
          // The demo tools (clock, calculator, deploy) let every tenant try server tools with no code.
          useFactory: (c: CanopyConfig) =>
            c.demoTools ? registerDemoTools(new ToolRegistry()) : new ToolRegistry(),
        },
        {
          provide: HookRegistry,
          useFactory: () => new HookRegistry({ parallelTimeoutMs: 5_000, injectionBudgetTokens: 4_000 }),
        },
      ],
      exports: [MODEL_GATEWAY, ToolRegistry, HookRegistry],
    };
    return AgentModule.root;
  }
}
