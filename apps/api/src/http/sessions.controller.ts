// Sessions: create, list, read, update (pinned too), close, delete.

import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Query,
  Req,
} from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { LIVE_REGISTRY, type LiveRegistry } from '@canopy/realtime';
import { resolveFilter, SessionService } from '@canopy/session';
import { CreateSessionDto, ListSessionsQueryDto, UpdateSessionDto } from './dto';
import { filterFromQuery } from './session-filter.query';
import { sessionDetailView, sessionView } from './views';

@ApiTags('sessions')
@ApiBearerAuth()
@Controller('v1/sessions')
export class SessionsController {
  constructor(
    private readonly sessions: SessionService,
    @Inject(LIVE_REGISTRY) private readonly registry: LiveRegistry,
  ) {}

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
    const filter = await resolveFilter(scope, filterFromQuery(query, req), this.registry);
    if (!filter) return { data: [], nextCursor: null };
    const page = await this.sessions.list(scope, {
      limit: query.limit,
      cursor: query.cursor ?? null,
      ...filter,
    });
    return { data: page.data.map(sessionView), nextCursor: page.nextCursor };
  }

  @Get(':id')
  @ApiOperation({ summary: 'A session with its status, path, usage, live subscribers and the run in flight' })
  async get(@CurrentScope() scope: Scope, @Param('id') id: string) {
    const record = await this.sessions.get(scope, id);
    let live = this.sessions.live.get(scope.tenantId, id);
    if (!live && record.status !== 'idle') live = await this.sessions.open(scope, id);
    return sessionDetailView(
      record,
      live ? { controllers: live.controllers, observers: live.observers } : null,
      live?.inFlight ?? null,
    );
  }

  @Patch(':id')
  @ApiOperation({
    summary: 'Change title, model, system, opts, tools, metadata, pinned (model/system/opts/tools idle only)',
  })
  update(@CurrentScope() scope: Scope, @Param('id') id: string, @Body() body: UpdateSessionDto) {
    return this.sessions.update(scope, id, body);
  }

  @Post(':id/close')
  @HttpCode(204)
  @ApiOperation({ summary: 'Stop the session being live (stored data untouched; idempotent)' })
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
