// Many sessions at once: delete, and cancel the runs in flight, by ids or by the list filters; capped per call
// (500), answering what was done and whether the filter matched more.

import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { SessionCatalogService, type BulkTarget } from '@canopy/manager';
import { BulkTargetDto } from './dto';
import { filterFromBody } from './session-filter.query';

@ApiTags('sessions')
@ApiBearerAuth()
@Controller('v1/sessions')
export class SessionBulkController {
  constructor(private readonly catalog: SessionCatalogService) {}

  @Post('delete')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'Delete sessions by ids or by filter (at most 500 a call; a busy one has its run stopped first): {deleted, ids, more}. A filter that narrows nothing needs all: true (every session)',
  })
  delete(@CurrentScope() scope: Scope, @Body() body: BulkTargetDto) {
    return this.catalog.deleteMany(scope, target(body));
  }

  @Post('cancel')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'Cancel the runs in flight of sessions by ids or by filter (at most 500 a call): {cancelled, runIds, more}. A filter that narrows nothing needs all: true (every session)',
  })
  cancel(@CurrentScope() scope: Scope, @Body() body: BulkTargetDto) {
    return this.catalog.cancelManyAudited(scope, target(body));
  }
}

function target(body: BulkTargetDto): BulkTarget {
  if (body.ids) return { ids: body.ids };
  const filter = body.filter ?? {};
  return {
    filter: filterFromBody(filter),
    ...(filter.q !== undefined ? { q: filter.q } : {}),
    ...(body.limit !== undefined ? { limit: body.limit } : {}),
  };
}
