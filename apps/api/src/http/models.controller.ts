// The models this deployment offers: what a model picker shows (the built-in mocks and each configured
// provider's listed models, with whether they take tools).

import { Controller, Get, Inject } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { ModelInfo } from '@canopy/core';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { Access } from '@canopy/auth';
import { listModels } from '@canopy/agent';

@ApiTags('sessions')
@ApiBearerAuth()
@Access('any')
@Controller('v1/models')
export class ModelsController {
  private readonly models: ModelInfo[];

  constructor(@Inject(CANOPY_CONFIG) config: CanopyConfig) {
    this.models = listModels(config);
  }

  @Get()
  @ApiOperation({
    summary:
      'The models a session can use here: the built-in mocks and the models listed for each configured provider (ANTHROPIC_MODELS, OPENAI_MODELS, OPENAI_COMPATIBLE_MODELS), each with its provider and whether it takes tools',
  })
  @ApiOkResponse({
    schema: {
      example: {
        data: [
          { id: 'mock:echo', provider: 'mock', name: 'echo', tools: false, description: 'Built in: …' },
          { id: 'openai:gpt-4.1', provider: 'openai', name: 'gpt-4.1', tools: true, description: null },
        ],
      },
    },
  })
  list(): { data: ModelInfo[] } {
    return { data: this.models };
  }
}
