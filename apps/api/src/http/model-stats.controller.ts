// The dashboard's per-model and per-user view: runs, latency, time to first token, tokens, cost, error rate and the
// share of thumbs up
// over a window of days, from the daily rollup (cheap over a year). A tenant key reads its own; the admin every
// tenant's, or one.

import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { createZodDto } from 'nestjs-zod';
import { modelStatsQuerySchema, type ModelStatsView } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import { Access, CurrentPrincipal, type Principal } from '@canopy/auth';
import { ModelStatsService } from '@canopy/manager';

class ModelStatsQueryDto extends createZodDto(modelStatsQuerySchema) {}

@ApiTags('live')
@ApiBearerAuth()
@Access('operator')
@Controller('v1/stats/models')
export class ModelStatsController {
  constructor(private readonly stats: ModelStatsService) {}

  @Get()
  @ApiOperation({
    summary:
      'Per model (groupBy=model, default) or per user (groupBy=user) over the UTC days from..to (default the last 30, at most 731): runs, errors and error rate, latency p50/p95 (created to finished) and time to first token p50/p95 (created to the first output), both within 25%, tokens, cost, thumbs up and down and the share of thumbs up, from the daily rollup (runs since the rollup began); the tenant’s own with an API key, every tenant’s (or tenantId’s) with the admin key',
  })
  get(@CurrentPrincipal() principal: Principal, @Query() query: ModelStatsQueryDto): Promise<ModelStatsView> {
    if (principal.kind === 'user')
      throw new CanopyException('forbidden', 'this route needs a tenant API key or the admin key');
    return this.stats.get(
      principal.kind === 'admin' ? { kind: 'admin' } : { kind: 'tenant', tenantId: principal.tenantId },
      query,
    );
  }
}
