// Commands on a session over HTTP: prompt, branch, navigate, cancel, resume. Answered by SessionCommands (the
// WebSocket gateway's too): runs answer 202 {runId} at once, or with `wait: true` the run's TurnResult (or the
// snake_case JsonResult for `format: "json"`) once it completes, pauses, fails or is cancelled.

import { Body, Controller, Delete, HttpCode, Param, Post, Res } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiExtraModels,
  ApiOperation,
  ApiResponse,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { Response } from 'express';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import {
  AcceptedDto,
  BranchDto,
  JsonResultDto,
  NavigateDto,
  PromptDto,
  ResumeDto,
  TurnResultDto,
} from './dto';
import { SessionCommands, type CommandAnswer } from './session-commands';

/** The answers of a command that starts a run: at once, or its result with `wait: true`. */
const RunAnswers = () => (target: object, key: string | symbol, descriptor: PropertyDescriptor) => {
  ApiResponse({
    status: 202,
    type: AcceptedDto,
    description: 'Started (or, `staged`, steered onto the busy run)',
  })(target, key, descriptor);
  ApiResponse({
    status: 200,
    description:
      '`wait: true`: the result once the run completes, pauses, fails or is cancelled — the TurnResult, or the JsonResult for `format: "json"`; `runId` and `status` (completed, paused, cancelled, error, max_steps) say what happened, `awaiting` the tool calls a paused run waits for',
    schema: { oneOf: [{ $ref: getSchemaPath(TurnResultDto) }, { $ref: getSchemaPath(JsonResultDto) }] },
  })(target, key, descriptor);
};

@ApiTags('commands')
@ApiBearerAuth()
@ApiExtraModels(TurnResultDto, JsonResultDto)
@Controller('v1/sessions/:id')
export class CommandsController {
  constructor(private readonly commands: SessionCommands) {}

  @Post('prompt')
  @ApiOperation({
    summary:
      'Prompt the session (202 {runId}; `ifBusy: "steer"` stages it on a busy run; `enqueue`, `interrupt`, `rollback` queue it: 202 {runId, queued: true} while it waits)',
  })
  @RunAnswers()
  async prompt(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Body() body: PromptDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    return send(res, await this.commands.prompt(scope, id, body));
  }

  @Post('branch')
  @ApiOperation({
    summary: 'Regenerate (user node), edit (assistant node + content) or start a new root (null)',
  })
  @RunAnswers()
  @ApiResponse({
    status: 422,
    description:
      '`not_user_node`: regenerating needs a user prompt node; `not_assistant_node`: an edit branches from an assistant node; `tool_use_node`: that assistant message has tool uses, which an edit after it would leave without results',
  })
  async branch(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Body() body: BranchDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    return send(res, await this.commands.branch(scope, id, body));
  }

  @Post('navigate')
  @HttpCode(200)
  @ApiOperation({ summary: 'Move the active path to a node and down to a tip (null clears it)' })
  navigate(@CurrentScope() scope: Scope, @Param('id') id: string, @Body() body: NavigateDto) {
    return this.commands.navigate(scope, id, body.nodeId);
  }

  @Post('cancel')
  @HttpCode(200)
  @ApiOperation({ summary: 'Cancel the run in flight (busy or paused); nothing of it is committed' })
  cancel(@CurrentScope() scope: Scope, @Param('id') id: string) {
    return this.commands.cancel(scope, id);
  }

  @Post('resume')
  @ApiOperation({
    summary:
      'Decide on a paused tool call: execute, reject or supply the result (an approved server tool runs as the caller who approved it)',
  })
  @RunAnswers()
  @ApiResponse({
    status: 400,
    description:
      '`bad_request` on `toolUseId`: it names no tool use awaiting a decision, or it is missing while several await one (`details.awaiting` lists them); with one awaited it may be left out',
  })
  async resume(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Body() body: ResumeDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    return send(res, await this.commands.resume(scope, id, body));
  }

  @Delete('queue/:queueId')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Take a queued prompt out of the session’s queue before its turn (404 once its run started)',
  })
  async cancelQueued(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Param('queueId') queueId: string,
  ): Promise<void> {
    await this.commands.cancelQueued(scope, id, queueId);
  }
}

function send(res: Response, answer: CommandAnswer): unknown {
  res.status(answer.status);
  return answer.body;
}
