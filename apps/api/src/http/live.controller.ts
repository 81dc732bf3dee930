// Live: the deployment's live sessions (the registry), a session's event stream (SSE, resumable with `after` or
// Last-Event-ID) and the tenant's activity feed (SSE; the admin key sees every tenant).

import { Controller, Get, Headers, HttpException, Inject, Param, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { Scope } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import {
  Access,
  CurrentPrincipal,
  CurrentScope,
  Public,
  QueryToken,
  scopeOf,
  type Principal,
} from '@canopy/auth';
import { SessionService } from '@canopy/session';
import { ACTIVITY_FEED, LIVE_REGISTRY, type ActivityFeed, type LiveRegistry } from '@canopy/realtime';
import { EventsQueryDto } from './dto';
import { SseRegistry, SseStream } from './sse';
import { liveView } from './views';

@ApiTags('live')
@ApiBearerAuth()
@Controller('v1')
export class LiveController {
  constructor(
    private readonly sessions: SessionService,
    private readonly streams: SseRegistry,
    @Inject(LIVE_REGISTRY) private readonly registry: LiveRegistry,
    @Inject(ACTIVITY_FEED) private readonly feed: ActivityFeed,
  ) {}

  @Get('live')
  @Access('any')
  @ApiOperation({
    summary:
      "Live sessions of the deployment and where each is served: a tenant's (a user's own with a user token); every tenant's, each with its tenantId, with the admin key",
  })
  async list(@CurrentPrincipal() principal: Principal) {
    if (principal.kind === 'admin') {
      const all = await this.registry.list(null);
      return { data: all.map((e) => ({ tenantId: e.tenantId, ...liveView(e) })) };
    }
    const scope = scopeOf(principal)!;
    const entries = await this.registry.list(scope.tenantId);
    return {
      data: entries.filter((e) => scope.userId === undefined || e.userId === scope.userId).map(liveView),
    };
  }

  @Get('live/:id')
  @ApiOperation({ summary: 'Where a live session is served (404 when it is not live)' })
  async whereis(@CurrentScope() scope: Scope, @Param('id') id: string) {
    const entry = await this.registry.get(scope.tenantId, id);
    if (!entry || (scope.userId !== undefined && entry.userId !== scope.userId)) {
      throw CanopyException.notFound('live session');
    }
    return liveView(entry);
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
    const unsubscribe = await this.feed.subscribe(tenantId, (event) =>
      stream.send({ event: event.type, data: { tenantId: event.tenantId, ...event.data, at: event.at } }),
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
