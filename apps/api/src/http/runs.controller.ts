// Runs: the record of one execution of the agent, with who started it, or of a queued prompt waiting to be one.

import { Controller, Get, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { SessionService } from '@canopy/session';
import { RunViewDto } from './dto';
import { queuedRunView, runView } from './views';

@ApiTags('runs')
@ApiBearerAuth()
@Controller('v1/runs')
export class RunsController {
  constructor(private readonly sessions: SessionService) {}

  @Get(':runId')
  @ApiOperation({
    summary:
      'A run: kind, status (queued|running|paused|completed|cancelled|error), usage (so far, while paused), attempts (executions so far), actor (who started it), times; a prompt waiting in its session’s queue (`ifBusy` enqueue, interrupt, rollback) answers `status: "queued"` with its `position` there (1: next) until its run starts, and 404 once taken out or dropped before its turn',
  })
  @ApiOkResponse({ type: RunViewDto })
  async get(@CurrentScope() scope: Scope, @Param('runId') runId: string) {
    const found = await this.sessions.getRunOrQueued(scope, runId);
    return 'run' in found ? runView(found.run) : queuedRunView(found.queued);
  }
}
