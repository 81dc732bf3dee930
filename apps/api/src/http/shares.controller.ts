// Share links: make one for a session's path, list and revoke them (a tenant key: the tenant's; a user token: its
// sessions'), read one with no credential (rate-limited per client address) and continue one as a session of the
// caller's own (its tenant only).

import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ThrottlerStorage } from '@nestjs/throttler';
import type { Request } from 'express';
import { createZodDto } from 'nestjs-zod';
import {
  createShareSchema,
  forkSharedSchema,
  listSharesQuerySchema,
  type CreatedShareView,
  type Scope,
  type SharedConversationView,
} from '@canopy/core';
import { CanopyException, InjectConfig, type CanopyConfig } from '@canopy/common';
import { CurrentScope, Public } from '@canopy/auth';
import { SharesService } from '@canopy/manager';

class CreateShareDto extends createZodDto(createShareSchema) {}
class ListSharesQueryDto extends createZodDto(listSharesQuerySchema) {}
class ForkSharedDto extends createZodDto(forkSharedSchema) {}

const WINDOW_MS = 60_000;

@ApiTags('shares')
@Controller('v1')
export class SharesController {
  constructor(
    private readonly shares: SharesService,
    @InjectConfig() private readonly config: CanopyConfig,
    @Inject(ThrottlerStorage) private readonly limits: ThrottlerStorage,
  ) {}

  @Post('sessions/:id/shares')
  @ApiBearerAuth()
  @ApiOperation({
    summary:
      'Share the path root -> nodeId (default: the head) read-only {nodeId?, expiresAt?, title?, includeUsage?}: 201 {id, token, url, nodeId, expiresAt, ...}. The link shows that path as it is now (later messages and other branches never); the token is shown once. Webhook session.shared',
  })
  create(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Body() body: CreateShareDto,
    @Req() req: Request,
  ): Promise<CreatedShareView> {
    return this.shares.create(scope, id, body, `${req.protocol}://${req.get('host') ?? 'localhost'}`);
  }

  @Get('shares')
  @ApiBearerAuth()
  @ApiOperation({
    summary:
      "Share links, newest first: the tenant's with an API key, those of the user's own sessions with a user token; filter by sessionId (never their tokens)",
  })
  list(@CurrentScope() scope: Scope, @Query() query: ListSharesQueryDto) {
    return this.shares.list(scope, {
      limit: query.limit,
      ...(query.sessionId !== undefined ? { sessionId: query.sessionId } : {}),
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
    });
  }

  @Delete('shares/:shareId')
  @HttpCode(204)
  @ApiBearerAuth()
  @ApiOperation({ summary: 'Revoke a share link: from now on its token answers 404 on every process' })
  async revoke(@CurrentScope() scope: Scope, @Param('shareId') id: string): Promise<void> {
    await this.shares.revoke(scope, id);
  }

  @Get('shared/:token')
  @Public()
  @ApiOperation({
    summary:
      'A shared conversation, with no credential: {title, sharedAt, turns} (each turn its prompt, reply and tool results; usage only if the link includes it), nothing else. 404 for a revoked, expired or unknown token; rate-limited per client address (RATE_LIMIT_SHARED_PER_ADDRESS)',
  })
  async read(@Param('token') token: string, @Req() req: Request): Promise<SharedConversationView> {
    await this.charge(req);
    return this.shares.read(token);
  }

  @Post('shared/:token/fork')
  @ApiBearerAuth()
  @ApiOperation({
    summary:
      'Continue a shared conversation {title?}: 201, a new session of the caller (a user token: its user) holding the shared path, forked copy-on-write (metadata.sharedFrom names the link). Only with a credential of the link’s tenant: 404 otherwise',
  })
  fork(@CurrentScope() scope: Scope, @Param('token') token: string, @Body() body: ForkSharedDto) {
    return this.shares.fork(scope, token, body);
  }

  /** Counts a read against its address's budget (the deployment's, in Redis when distributed); 429 over it. */
  private async charge(req: Request): Promise<void> {
    const limit = this.config.limits.sharedPerAddressPerMinute;
    if (limit === 0) return;
    const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    const key = `${this.config.redis.prefix}:shared:${address}`;
    const hit = await this.limits.increment(key, WINDOW_MS, limit, WINDOW_MS, 'shared');
    if (hit.isBlocked)
      throw new CanopyException('rate_limited', `too many requests: ${limit} per minute`, {
        limit,
        retryAfterSeconds: hit.timeToBlockExpire,
      });
  }
}
