// What a session can use on this deployment: the models (the built-in mocks and each configured provider's
// listed models, with whether they take tools), the registered server tools and the caller's tenant's MCP servers'
// tools. What a playground's pickers show.

import { Controller, Get, Inject } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { ModelInfo, ServerToolInfo } from '@canopy/core';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { Access, CurrentPrincipal, type Principal } from '@canopy/auth';
import { ProviderKeysService } from '@canopy/tenancy';
import { listModels, McpToolbox, modelLimits, ToolRegistry } from '@canopy/agent';

@ApiTags('sessions')
@ApiBearerAuth()
@Access('any')
@Controller('v1')
export class ModelsController {
  private readonly models: ModelInfo[];

  constructor(
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
    private readonly tools: ToolRegistry,
    private readonly providerKeys: ProviderKeysService,
    private readonly mcp: McpToolbox,
  ) {
    this.models = listModels(config);
  }

  @Get('models')
  @ApiOperation({
    summary:
      'The models a session can use here: the built-in mocks, the models listed for each configured provider (ANTHROPIC_MODELS, OPENAI_MODELS, OPENAI_COMPATIBLE_MODELS) and those of the caller’s tenant’s own provider keys (PUT /v1/providers/:provider), each with its provider, whether it takes tools, and its context window and output limit in tokens (null when unknown: the built-in table and MODEL_LIMITS say; a mock’s are its session’s opts.contextWindow and opts.maxOutputTokens)',
  })
  @ApiOkResponse({
    schema: {
      example: {
        data: [
          {
            id: 'mock:echo',
            provider: 'mock',
            name: 'echo',
            tools: false,
            contextWindow: null,
            maxOutputTokens: null,
            description: 'Built in: …',
          },
          {
            id: 'openai:gpt-4.1',
            provider: 'openai',
            name: 'gpt-4.1',
            tools: true,
            contextWindow: 1_047_576,
            maxOutputTokens: 32_768,
            description: null,
          },
        ],
      },
    },
  })
  async list(@CurrentPrincipal() principal: Principal): Promise<{ data: ModelInfo[] }> {
    if (principal.kind === 'admin') return { data: this.models };
    // A tenant's own provider keys add the models it listed with them.
    return {
      data: await this.providerKeys.modelsFor(principal.tenantId, this.models, (model) =>
        modelLimits(model, {}, this.config.modelLimits),
      ),
    };
  }

  @Get('tools')
  @ApiOperation({
    summary:
      'The server tools registered on this deployment (sessions enable them by name in opts.serverTools), then those of the caller’s tenant’s enabled MCP servers (named <server>__<tool>, with `server`; sessions enable them by server in opts.mcpServers), each with its description, input schema and whether it needs approval',
  })
  async listTools(@CurrentPrincipal() principal: Principal): Promise<{ data: ServerToolInfo[] }> {
    const mcp = principal.kind === 'admin' ? [] : await this.mcp.toolInfos(principal.tenantId);
    return { data: [...this.registered(), ...mcp] };
  }

  private registered(): ServerToolInfo[] {
    return this.tools.names().map((name) => {
      const spec = this.tools.spec(name);
      return {
        name,
        description: spec.description,
        approval: this.tools.get(name)!.approval === true,
        inputSchema: spec.inputSchema,
      };
    });
  }
}
