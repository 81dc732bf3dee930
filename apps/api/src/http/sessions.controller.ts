// Sessions: create, list, read, update (pinned too), open (with start options), close, delete — the manager's.

import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { SessionManager } from '@canopy/manager';
import {
  CreateSessionDto,
  ListSessionsQueryDto,
  OpenedSessionDto,
  OpenSessionDto,
  SessionDetailDto,
  UpdateSessionDto,
} from './dto';
import { filterFromQuery } from './session-filter.query';
import { sessionDetailView, sessionView } from './views';

@ApiTags('sessions')
@ApiBearerAuth()
@Controller('v1/sessions')
export class SessionsController {
  constructor(private readonly sessions: SessionManager) {}

  @Post()
  @ApiOperation({ summary: 'Create a session (persisted at once); a user token’s userId is forced' })
  create(@CurrentScope() scope: Scope, @Body() body: CreateSessionDto) {
    return this.sessions.create(scope, body);
  }

  @Get()
  @ApiOperation({
    summary:
      'List sessions, newest updatedAt first; filter by userId, live, model, status, pinned, created/updated ranges, metadata.<key>=<value> and metadataAny.<key>=<value> (repeatable)',
  })
  async list(@CurrentScope() scope: Scope, @Query() query: ListSessionsQueryDto, @Req() req: Request) {
    const page = await this.sessions.list(scope, {
      limit: query.limit,
      cursor: query.cursor ?? null,
      ...filterFromQuery(query, req),
    });
    return { data: page.data.map(sessionView), nextCursor: page.nextCursor };
  }

  @Get(':id')
  @ApiOperation({
    summary:
      'A session with its status, path, usage, live subscribers, the run in flight, its queued prompts (`queued`: [{id, mode, content, createdAt}] in the order they will run) and its token meter (`context`)',
  })
  @ApiOkResponse({ type: SessionDetailDto })
  async get(@CurrentScope() scope: Scope, @Param('id') id: string) {
    // A read changes nothing: a session live nowhere is described without being opened.
    const { record, live, inFlight, queued } = await this.sessions.describe(scope, id);
    return { ...sessionDetailView(record, live, inFlight), queued };
  }

  @Patch(':id')
  @ApiOperation({
    summary: 'Change title, model, system, opts, tools, metadata, pinned (model/system/opts/tools idle only)',
  })
  update(@CurrentScope() scope: Scope, @Param('id') id: string, @Body() body: UpdateSessionDto) {
    return this.sessions.update(scope, id, body);
  }

  @Post(':id/open')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Open the session live with start options reconciled with its persisted state',
    description: [
      'A controller’s start options are reconciled with what is persisted, field by field:',
      '- `model`: the persisted model wins while it is usable; the start model only replaces one that is not (400 `bad_request` on `model` when neither is usable).',
      '- `system`, `opts`: the start option wins (persisted); absent, the persisted one stays.',
      '- `title` is never a start option (the persisted title wins); client `tools` change through PATCH.',
      'What a controller’s open changes is persisted like a PATCH — idle only (409 `session_busy` / `session_paused`) — and announced by a `state` event reporting the resolved model, system and opts (with `store` when something was written).',
      'An observer (`mode: "observer"`) opens the session as it is and takes no start options.',
      'The answer: the session (as `GET /v1/sessions/:id`), `opened` (`started`: the open made it live; `existing`: it was live already), `resolution` (which side each field came from) and `seq` (subscribe to the events with `after=<seq>` to miss nothing after the open).',
    ].join('\n'),
  })
  @ApiOkResponse({ type: OpenedSessionDto })
  async open(@CurrentScope() scope: Scope, @Param('id') id: string, @Body() body: OpenSessionDto) {
    const { mode, ...start } = body;
    const opened = await this.sessions.open(scope, id, start, mode ?? 'controller');
    return {
      session: {
        ...sessionDetailView(
          opened.session,
          { controllers: opened.live.controllers, observers: opened.live.observers },
          opened.live.inFlight,
        ),
        queued: opened.queued,
      },
      opened: opened.opened,
      resolution: opened.resolution,
      seq: opened.live.seq,
    };
  }

  @Post(':id/close')
  @HttpCode(204)
  @ApiOperation({
    summary:
      'Stop the session being live (stored data untouched; idempotent). 409 session_busy while a run is in flight: close once it ends, or cancel it first',
  })
  async close(@CurrentScope() scope: Scope, @Param('id') id: string): Promise<void> {
    await this.sessions.close(scope, id);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a session with its tree and runs' })
  async delete(@CurrentScope() scope: Scope, @Param('id') id: string): Promise<void> {
    await this.sessions.delete(scope, id);
  }
}
