// Run statistics for dashboards: runs started, finished and failed per minute with their tokens and latency, usage
// per tenant and the latest runs, from the runs table (so they cover the whole deployment and outlive any page
// that shows them), plus live sessions over time as this api instance has sampled them.

import { Controller, Get, Logger, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { RunStats } from '@canopy/core';
import { Access, CurrentPrincipal, type Principal } from '@canopy/auth';
import { RunStatsService } from '@canopy/tenancy';
import { LiveHistory } from '../ops/live-history.service';
import { StatsQueryDto } from './dto';

@ApiTags('live')
@ApiBearerAuth()
@Access('operator')
@Controller('v1/stats')
export class StatsController {
  private readonly logger = new Logger('Stats');

  constructor(
    private readonly stats: RunStatsService,
    private readonly history: LiveHistory,
  ) {}

  @Get()
  @ApiOperation({
    summary:
      "Over the last `minutes` (default 60, at most 1440): runs started/finished/failed, tokens and latency p50/p95 per minute, usage per tenant, the latest runs with their sessions' titles, and live sessions per minute as this api instance sampled them; the tenant's own with an API key, every tenant's with the admin key",
  })
  async get(@CurrentPrincipal() principal: Principal, @Query() query: StatsQueryDto): Promise<RunStats> {
    // What is live right now belongs in the answer, not only what the last periodic sample saw.
    await this.history.sample().catch((err: unknown) => this.logger.warn({ err }, 'live sample failed'));
    const stored = await this.stats.stats(principal, query.minutes);
    return {
      ...stored,
      liveSessions: this.history.series(this.stats.tenantOf(principal), new Date(stored.since)),
    };
  }
}
