// Finding sessions: full-text search over their messages and counting, with the list filters. Registered before
// the sessions controller so that `search` and `count` are not taken for session ids.

import { Controller, Get, Query, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import type { Scope } from '@canopy/core';
import { CurrentScope } from '@canopy/auth';
import { SessionCatalogService } from '@canopy/manager';
import { CountQueryDto, SearchQueryDto } from './dto';
import { filterFromQuery } from './session-filter.query';

@ApiTags('sessions')
@ApiBearerAuth()
@Controller('v1/sessions')
export class SessionSearchController {
  constructor(private readonly catalog: SessionCatalogService) {}

  @Get('search')
  @ApiOperation({
    summary:
      'Full-text search over message text (websearch syntax: words, "quoted phrases", or, -word) with the list filters; ranked, each hit with its matching node ids and a snippet (highlights: [start, end) offsets)',
  })
  search(@CurrentScope() scope: Scope, @Query() query: SearchQueryDto, @Req() req: Request) {
    return this.catalog.search(scope, {
      q: query.q,
      filter: filterFromQuery(query, req),
      limit: query.limit,
      cursor: query.cursor ?? null,
    });
  }

  @Get('count')
  @ApiOperation({ summary: 'How many sessions match the list filters (and the words q, when given)' })
  async count(@CurrentScope() scope: Scope, @Query() query: CountQueryDto, @Req() req: Request) {
    const count = await this.catalog.count(scope, {
      filter: filterFromQuery(query, req),
      ...(query.q !== undefined ? { q: query.q } : {}),
    });
    return { count };
  }
}
