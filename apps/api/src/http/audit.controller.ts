// The audit log: a tenant key reads its tenant's events, the admin any tenant's (`tenantId`) or all. Newest first,
// filtered by action prefix, target and time, paginated. Never message text or secrets (nothing writes them).

import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access, CurrentPrincipal, type Principal } from '@canopy/auth';
import { AuditService, type AuditFilter } from '@canopy/tenancy';
import { AuditQueryDto } from './dto';

@ApiTags('audit')
@ApiBearerAuth()
@Access('operator')
@Controller('v1/audit')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @ApiOperation({
    summary:
      'Audit events, newest first: {data: [{id, tenantId, actor, action, targetType, targetId, requestId, before, after, createdAt}], nextCursor}. Filters: action (prefix), targetType, targetId, from, to, limit, cursor; tenantId (admin only)',
  })
  list(@CurrentPrincipal() principal: Principal, @Query() query: AuditQueryDto) {
    const filter: AuditFilter = {
      limit: query.limit,
      ...(query.action !== undefined ? { action: query.action } : {}),
      ...(query.targetType !== undefined ? { targetType: query.targetType } : {}),
      ...(query.targetId !== undefined ? { targetId: query.targetId } : {}),
      ...(query.from !== undefined ? { from: new Date(query.from) } : {}),
      ...(query.to !== undefined ? { to: new Date(query.to) } : {}),
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
    };
    return this.audit.list(principal, query.tenantId, filter);
  }
}
