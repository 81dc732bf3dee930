// Live: the deployment's live sessions (the registry), a session's event stream (SSE, resumable with `after` or
// Last-Event-ID) and the tenant's activity feed (SSE; the admin key sees every tenant).

import { Controller, Get, Headers, HttpException, Param, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { Scope } from '@canopy/core';
import {
  Access,
  CurrentPrincipal,
  CurrentScope,
  Public,
  QueryToken,
  scopeOf,
  type Principal,
} from '@canopy/auth';
import { SessionManager } from '@canopy/manager';
import { SessionService } from '@canopy/session';
import { EventsQueryDto } from './dto';
import { SseRegistry, SseStream } from './sse';
import { activityView, liveView } from './views';

@ApiTags('live')
@ApiBearerAuth()
@Controller('v1')
export class LiveController {
  constructor(
    private readonly sessions: SessionService,
    private readonly manager: SessionManager,
    private readonly streams: SseRegistry,
  ) {}

  @Get('live')
  @Access('any')
  @ApiOperation({
    summary:
      "Live sessions of the deployment and where each is served: a tenant's (a user's own with a user token); every tenant's, each with its tenantId, with the admin key",
  })
  async list(@CurrentPrincipal() principal: Principal) {
    if (principal.kind === 'admin') {
      const all = await this.manager.whereLiveEverywhere();
      return { data: all.map((e) => ({ tenantId: e.tenantId, ...liveView(e) })) };
    }
    const entries = await this.manager.whereLive(scopeOf(principal)!);
    return { data: entries.map(liveView) };
  }

  @Get('live/:id')
  @ApiOperation({ summary: 'Where a live session is served (404 when it is not live)' })
  async whereis(@CurrentScope() scope: Scope, @Param('id') id: string) {
    return liveView(await this.manager.whereis(scope, id));
  }

  @Get('sessions/:id/events')
  @QueryToken()
  @ApiOperation({
    summary: 'Session events (SSE): a snapshot, then every event; resume with ?after=<seq> or Last-Event-ID',
  })
  async events(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Query() query: EventsQueryDto,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const after = query.after ?? parseSeq(lastEventId);
    await this.sessions.get(scope, id); // not_found before the stream starts
    const stream = new SseStream(req, res, this.streams);
    const subscription = await this.sessions.subscribe(
      scope,
      id,
      (event) => stream.send({ id: event.seq, event: event.type, data: event.data }),
      {
        mode: query.mode ?? 'controller',
        ...(after !== undefined ? { after } : {}),
        onEnd: (reason) => stream.close({ reason, reconnect: reason !== 'delete' }),
      },
    );
    stream.whenClosed(() => subscription.unsubscribe());
  }

  @Get('activity')
  @QueryToken()
  @Access('operator')
  @ApiOperation({ summary: 'Activity feed (SSE) of the tenant, or of every tenant with the admin key' })
  async activity(
    @CurrentPrincipal() principal: Principal,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const tenantId = principal.kind === 'admin' ? null : scopeOf(principal)!.tenantId;
    const stream = new SseStream(req, res, this.streams);
    const unsubscribe = await this.manager.followActivity(tenantId, (event) =>
      stream.send({ event: event.type, data: activityView(event) }),
    );
    stream.whenClosed(() => void unsubscribe());
  }
}

/** GET /v1/ws without an upgrade: the WebSocket endpoint, documented here (426 for plain HTTP). */
@ApiTags('live')
@Controller('v1')
export class WebSocketDocController {
  @Get('ws')
  @Public()
  @ApiOperation({
    summary:
      'WebSocket (upgrade with ?token=<credential> or Authorization). Client frames: {op: subscribe|unsubscribe|activity|prompt|branch|navigate|cancel|resume, ref?, sessionId, ...}; server frames: {type: event|activity|reply|end, ...}; an event frame is {type: "event", sessionId, seq, event, data, at} with `at` the time it was published (ms since the epoch)',
  })
  upgradeRequired(): never {
    throw new HttpException('this endpoint speaks WebSocket: send an Upgrade request', 426);
  }
}

function parseSeq(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,16}$/.test(value.trim())) return undefined;
  return Number(value.trim());
}
