// Run statistics for dashboards: runs started, finished and failed per minute and usage per tenant over a recent
// window, from the runs table (so they cover the whole deployment and outlive any page that shows them).

import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access, CurrentPrincipal, scopeOf, type Principal } from '@canopy/auth';
import { RunStatsRepository } from '@canopy/store';
import { StatsQueryDto } from './dto';

@ApiTags('live')
@ApiBearerAuth()
@Access('operator')
@Controller('v1/stats')
export class StatsController {
  constructor(private readonly stats: RunStatsRepository) {}

  @Get()
  @ApiOperation({
    summary:
      "Runs started/finished/failed per minute and usage per tenant over the last `minutes` (default 60, at most 1440): the tenant's own with an API key, every tenant's with the admin key",
  })
  async get(@CurrentPrincipal() principal: Principal, @Query() query: StatsQueryDto) {
    const tenantId = principal.kind === 'admin' ? null : scopeOf(principal)!.tenantId;
    return this.stats.stats(tenantId, query.minutes);
  }
}
