// AG-UI (CopilotKit and the other AG-UI clients): POST /v1/ag-ui takes a RunAgentInput and answers the run as
// AG-UI events over SSE (or the protocol's binary encoding when the client asks for it).

import { Body, Controller, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { AgUiRunInputDto } from './frontend.dto';
import { AgUiService } from './ag-ui.service';

@ApiTags('frontend protocols')
@ApiBearerAuth()
@Controller('v1/ag-ui')
export class AgUiController {
  constructor(private readonly agUi: AgUiService) {}

  @Post()
  @ApiOperation({
    summary:
      'Run an AG-UI agent: a RunAgentInput whose threadId is the session (created on first use: model from forwardedProps.model or DEFAULT_MODEL, tools = client tools); a parentRunId naming an earlier run of the thread branches after the reply that run ended at (404 when it names none); answers RUN_STARTED, MESSAGES_SNAPSHOT, the run as text message, reasoning, tool call and step events, a MESSAGES_SNAPSHOT of what it committed, then RUN_FINISHED (an interrupt outcome for an approval) or RUN_ERROR',
  })
  @ApiProduces('text/event-stream')
  @ApiResponse({ status: 200, description: 'The run as AG-UI events' })
  async run(
    @CurrentScope() scope: Scope,
    @Body() body: AgUiRunInputDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await this.agUi.run(scope, body, req, res);
  }
}
