// The audit log: a tenant key reads its tenant's events, the admin any tenant's (`tenantId`) or all. Newest first,
// filtered by action prefix, target and time, paginated. Never message text or secrets (nothing writes them).

import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CanopyException } from '@canopy/common';
import { Access, CurrentPrincipal, type Principal } from '@canopy/auth';
import { AuditRepository, type AuditFilter } from '@canopy/store';
import { AuditQueryDto } from './dto';

@ApiTags('audit')
@ApiBearerAuth()
@Access('operator')
@Controller('v1/audit')
export class AuditController {
  constructor(private readonly audit: AuditRepository) {}

  @Get()
  @ApiOperation({
    summary:
      'Audit events, newest first: {data: [{id, tenantId, actor, action, targetType, targetId, requestId, before, after, createdAt}], nextCursor}. Filters: action (prefix), targetType, targetId, from, to, limit, cursor; tenantId (admin only)',
  })
  async list(@CurrentPrincipal() principal: Principal, @Query() query: AuditQueryDto) {
    const filter: AuditFilter = {
      limit: query.limit,
      ...(query.action !== undefined ? { action: query.action } : {}),
      ...(query.targetType !== undefined ? { targetType: query.targetType } : {}),
      ...(query.targetId !== undefined ? { targetId: query.targetId } : {}),
      ...(query.from !== undefined ? { from: new Date(query.from) } : {}),
      ...(query.to !== undefined ? { to: new Date(query.to) } : {}),
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
    };
    if (principal.kind === 'admin') return this.audit.listForAdmin(query.tenantId, filter);
    if (principal.kind !== 'tenant')
      throw new CanopyException('forbidden', 'this route needs a tenant API key or the admin key');
    if (query.tenantId !== undefined && query.tenantId !== principal.tenantId)
      throw CanopyException.badRequest('tenantId is for the admin key', { field: 'tenantId' });
    return this.audit.listForTenant({ tenantId: principal.tenantId }, filter);
  }
}
