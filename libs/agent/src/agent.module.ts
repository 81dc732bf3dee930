// The agent's parts for a deployable: the model gateway (the configured providers, a tenant's own provider keys
// first, each call traced when OpenTelemetry is on), the server tools (the demo tools when DEMO_TOOLS is on, and
// each run's tenant's MCP servers' tools through this process's pool of MCP clients) and the hooks, both registries the app may fill at start-up. AgentModule.forRoot() is one module per process however many import it.

import { Module, type DynamicModule } from '@nestjs/common';
import { CANOPY_CONFIG, guardedFetch, tracingFetch, type CanopyConfig } from '@canopy/common';
import { McpServersRepository, ProviderKeysRepository, TenancyModule } from '@canopy/tenancy';
import { FilesModule, FilesService } from '@canopy/store';
import { FileAttachmentsGateway } from './files/file-attachments.gateway';
import { HookRegistry } from './hooks/hook-registry';
import { MODEL_GATEWAY } from './model/model-gateway.port';
import { createModelGateway } from './model/model.gateway';
import { TenantCredentialsGateway } from './model/tenant-credentials.gateway';
import { TracedGateway } from './telemetry/traced.gateway';
import { registerDemoTools } from './tools/demo-tools';
import { ToolRegistry } from './tools/tool-registry';
import { McpClientPool } from './mcp/mcp-client-pool';
import { McpToolbox } from './mcp/mcp-toolbox';

/** How Canopy names itself to MCP servers (clientInfo.version). */
const CLIENT_VERSION = '0.1.0';

@Module({})
export class AgentModule {
  private static root: DynamicModule | null = null;

  static forRoot(): DynamicModule {
    AgentModule.root ??= {
      module: AgentModule,
      imports: [TenancyModule.forRoot(), FilesModule.forRoot()],
      providers: [
        {
          provide: MODEL_GATEWAY,
          inject: [CANOPY_CONFIG, ProviderKeysRepository, FilesService],
          // Stored files' bytes are read for each call (messages keep their ids).
          useFactory: (c: CanopyConfig, keys: ProviderKeysRepository, files: FilesService) =>
            new TracedGateway(
              new FileAttachmentsGateway(new TenantCredentialsGateway(createModelGateway(c), keys), files, {
                inlineTextMaxBytes: c.files.inlineTextMaxBytes,
              }),
            ),
        },
        {
          provide: McpClientPool,
          inject: [CANOPY_CONFIG, McpServersRepository],
          useFactory: (c: CanopyConfig, servers: McpServersRepository) =>
            new McpClientPool({
              // Every request to a tenant's MCP server passes the SSRF guard (ALLOW_PRIVATE_TARGETS) and carries the
              // caller's trace context (traceparent) when OpenTelemetry is on.
              fetch: tracingFetch(guardedFetch(c.targets.tenantUrls, 'MCP server URL')),
              connectTimeoutMs: c.mcp.connectTimeoutMs,
              idleCloseMs: c.mcp.idleCloseMs,
              clientVersion: CLIENT_VERSION,
              onState: (target, state) =>
                void servers.recordState(target.tenantId, target.serverId, state).catch(() => undefined),
            }),
        },
        {
          provide: McpToolbox,
          inject: [CANOPY_CONFIG, McpServersRepository, McpClientPool],
          useFactory: (c: CanopyConfig, servers: McpServersRepository, pool: McpClientPool) =>
            new McpToolbox(servers, pool, { toolTimeoutMs: c.sessions.toolTimeoutMs }),
        },
        {
          provide: ToolRegistry,
          inject: [CANOPY_CONFIG, McpToolbox],
          // The demo tools (clock, calculator, deploy) let every tenant try server tools with no code.
          useFactory: (c: CanopyConfig, mcp: McpToolbox) =>
            (c.demoTools ? registerDemoTools(new ToolRegistry()) : new ToolRegistry()).useSource(mcp),
        },
        {
          provide: HookRegistry,
          useFactory: () => new HookRegistry({ parallelTimeoutMs: 5_000, injectionBudgetTokens: 4_000 }),
        },
      ],
      exports: [MODEL_GATEWAY, ToolRegistry, HookRegistry, McpToolbox],
    };
    return AgentModule.root;
  }
}
