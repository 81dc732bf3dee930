// The AI SDK's chat protocol (useChat with DefaultChatTransport): POST /v1/ui/chat answers the UI message stream
// of the run it starts; GET /v1/ui/chat/:id/stream is the transport's reconnect URL (204 when idle, else the run in
// flight from its start); GET /v1/ui/chat/:id/messages is the active path as UIMessage[] for the initial load.
// A stop is a cancel: the transport's abort only closes the stream (the run goes on, and can be resumed);
// POST /v1/sessions/:id/cancel stops it.

import { Body, Controller, Get, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { FrontendChats } from './frontend-chats.service';
import { UiChatRequestDto } from './frontend.dto';
import { UiChatService } from './ui-chat.service';
import { UiMessageStream } from './ui-message-stream';
import { uiMessagesOf } from './ui-messages';

@ApiTags('frontend protocols')
@ApiBearerAuth()
@Controller('v1/ui/chat')
export class UiChatController {
  constructor(
    private readonly chat: UiChatService,
    private readonly chats: FrontendChats,
    private readonly stream: UiMessageStream,
  ) {}

  @Post()
  @ApiOperation({
    summary:
      "The AI SDK's chat request (DefaultChatTransport): `submit-message` prompts the session `id` (created on first use with the body's `model`, `system`, `opts`, `tools`, or DEFAULT_MODEL), `regenerate-message` regenerates a message's turn; answers the run as the UI message stream (SSE, x-vercel-ai-ui-message-stream: v1)",
  })
  @ApiProduces('text/event-stream')
  @ApiResponse({ status: 200, description: 'The UI message stream of the run' })
  async send(
    @CurrentScope() scope: Scope,
    @Body() body: UiChatRequestDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const run = await this.chat.send(scope, body);
    this.stream.pipe(scope, body.id, run, req, res, { tools: run.tools });
  }

  @Get(':id/stream')
  @ApiOperation({
    summary:
      "Resume (the transport's reconnect URL): 204 when no run is in flight, else the run in flight from its start as the UI message stream",
  })
  @ApiProduces('text/event-stream')
  @ApiResponse({ status: 204, description: 'No run in flight' })
  async resume(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    // Idle: answered from the store, without making the session live.
    const run = (await this.chats.inFlight(scope, id)) ? await this.chats.followInFlight(scope, id) : null;
    if (!run) {
      res.status(204).end();
      return;
    }
    this.stream.pipe(scope, id, run, req, res, {
      tools: run.snapshot.session.tools,
      replay: { inFlight: run.inFlight, paused: run.snapshot.session.status === 'paused' },
    });
  }

  @Get(':id/messages')
  @HttpCode(200)
  @ApiOperation({
    summary:
      "The active path as the AI SDK's UIMessage[] (text, reasoning, tool and file parts; the run in flight last), each message's metadata {nodeId, versions, versionIndex}",
  })
  async messages(@CurrentScope() scope: Scope, @Param('id') id: string) {
    const { tree, session, inFlight } = await this.chats.conversation(scope, id);
    return uiMessagesOf(tree, inFlight, session.status === 'paused', session.tools);
  }
}
