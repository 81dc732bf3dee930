// Runs: the record of one execution of the agent.

import { Controller, Get, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { SessionService } from '@canopy/session';
import { runView } from './views';

@ApiTags('runs')
@ApiBearerAuth()
@Controller('v1/runs')
export class RunsController {
  constructor(private readonly sessions: SessionService) {}

  @Get(':runId')
  @ApiOperation({
    summary:
      'A run: kind, status (queued|running|paused|completed|cancelled|error), usage, attempts (executions so far), times',
  })
  async get(@CurrentScope() scope: Scope, @Param('runId') runId: string) {
    return runView(await this.sessions.getRun(scope, runId));
  }
}
