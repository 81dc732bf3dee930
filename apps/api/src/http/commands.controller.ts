// Commands on a session: prompt, branch, navigate, cancel, resume. Runs answer 202 {runId} at once, or with
// `wait: true` the run's TurnResult (or the snake_case JsonResult for `format: "json"`) once it completes,
// pauses, fails or is cancelled.

import { Body, Controller, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { SessionService, type CommandResult } from '@canopy/session';
import { BranchDto, NavigateDto, PromptDto, ResumeDto } from './dto';

interface WaitOptions {
  wait?: boolean;
  format?: 'turn' | 'json';
}

@ApiTags('commands')
@ApiBearerAuth()
@Controller('v1/sessions/:id')
export class CommandsController {
  constructor(private readonly sessions: SessionService) {}

  @Post('prompt')
  @ApiOperation({ summary: 'Prompt the session (202 {runId}; `ifBusy: "steer"` stages it on a busy run)' })
  async prompt(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Body() body: PromptDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    const result = await this.sessions.prompt(scope, id, body);
    return this.answer(scope, id, result, body, res);
  }

  @Post('branch')
  @ApiOperation({
    summary: 'Regenerate (user node), edit (assistant node + content) or start a new root (null)',
  })
  async branch(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Body() body: BranchDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    const result = await this.sessions.branch(scope, id, {
      nodeId: body.nodeId,
      ...(body.content !== undefined ? { content: body.content } : {}),
      ...(body.maxSteps !== undefined ? { maxSteps: body.maxSteps } : {}),
    });
    return this.answer(scope, id, result, body, res);
  }

  @Post('navigate')
  @HttpCode(200)
  @ApiOperation({ summary: 'Move the active path to a node and down to a tip (null clears it)' })
  async navigate(@CurrentScope() scope: Scope, @Param('id') id: string, @Body() body: NavigateDto) {
    const { path, head } = await this.sessions.navigate(scope, id, body.nodeId);
    return { path, head };
  }

  @Post('cancel')
  @HttpCode(200)
  @ApiOperation({ summary: 'Cancel the run in flight (busy or paused); nothing of it is committed' })
  cancel(@CurrentScope() scope: Scope, @Param('id') id: string) {
    return this.sessions.cancel(scope, id);
  }

  @Post('resume')
  @ApiOperation({ summary: 'Decide on a paused tool call: execute, reject or supply the result' })
  async resume(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Body() body: ResumeDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    const result = await this.sessions.resume(scope, id, {
      ...(body.toolUseId !== undefined ? { toolUseId: body.toolUseId } : {}),
      decision: body.decision,
    });
    return this.answer(scope, id, result, body, res);
  }

  private async answer(scope: Scope, id: string, result: CommandResult, options: WaitOptions, res: Response) {
    if (!options.wait || result.staged) {
      res.status(202);
      return result.staged ? { runId: result.runId, staged: true } : { runId: result.runId };
    }
    res.status(200);
    const run = await this.sessions.waitForRun(scope, id, result.runId);
    const turn = this.sessions.toTurnResult(id, run);
    return options.format === 'json' ? turn.toJsonResult() : turn.toJSON();
  }
}
