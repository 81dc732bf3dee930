// Runs: the record of one execution of the agent, with who started it.

import { Controller, Get, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { SessionService } from '@canopy/session';
import { RunViewDto } from './dto';
import { runView } from './views';

@ApiTags('runs')
@ApiBearerAuth()
@Controller('v1/runs')
export class RunsController {
  constructor(private readonly sessions: SessionService) {}

  @Get(':runId')
  @ApiOperation({
    summary:
      'A run: kind, status (queued|running|paused|completed|cancelled|error), usage (so far, while paused), attempts (executions so far), actor (who started it), times',
  })
  @ApiOkResponse({ type: RunViewDto })
  async get(@CurrentScope() scope: Scope, @Param('runId') runId: string) {
    return runView(await this.sessions.getRun(scope, runId));
  }
}
