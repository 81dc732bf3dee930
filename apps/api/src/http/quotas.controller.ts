// Quotas and usage. The admin sets a tenant's quotas (/v1/admin/tenants/:id/quotas); a tenant sets its users'
// (/v1/quotas/users/:userId) and reads all of its own with their usage in the current period. GET /v1/usage sums
// the stored runs' usage over a window, grouped by day, user, model or session: a tenant key its own, the admin any
// tenant's or every tenant's.

import { Body, Controller, Get, Param, Put, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CanopyException } from '@canopy/common';
import type { Scope } from '@canopy/core';
import { Access, CurrentPrincipal, CurrentScope, type Principal } from '@canopy/auth';
import { QuotasService } from '@canopy/tenancy';
import { PutQuotasDto, UsageQueryDto } from './dto';

@ApiTags('quotas')
@ApiBearerAuth()
@Controller('v1')
export class QuotasController {
  constructor(private readonly quotas: QuotasService) {}

  @Get('quotas')
  @Access('tenant')
  @ApiOperation({
    summary:
      'The tenant’s quotas (set by the admin) and its users’ (set by the tenant), each with its usage in the current period and when it resets',
  })
  list(@CurrentScope() scope: Scope) {
    return this.quotas.overview(scope.tenantId);
  }

  @Put('quotas/users/:userId')
  @Access('tenant')
  @ApiOperation({
    summary:
      'Set one user’s quotas: {quotas: [{metric: "tokens" | "cost" | "runs" | "storage", period: "day" | "month", limit}]} (replaces them; [] removes them)',
  })
  setUser(@CurrentScope() scope: Scope, @Param('userId') userId: string, @Body() body: PutQuotasDto) {
    if (userId.length > 200) throw CanopyException.badRequest('userId is too long', { field: 'userId' });
    return this.quotas.set(scope.tenantId, userId, body.quotas);
  }

  @Get('admin/tenants/:tenantId/quotas')
  @Access('admin')
  @ApiOperation({ summary: 'A tenant’s quotas and its users’, with their usage in the current period' })
  adminList(@Param('tenantId') tenantId: string) {
    return this.quotas.overview(tenantId);
  }

  @Put('admin/tenants/:tenantId/quotas')
  @Access('admin')
  @ApiOperation({
    summary:
      'Set a tenant’s quotas: {quotas: [{metric: "tokens" | "cost" | "runs" | "storage", period: "day" | "month", limit}]} (replaces them; [] removes them). A prompt over one answers 429 quota_exceeded',
  })
  adminSet(@Param('tenantId') tenantId: string, @Body() body: PutQuotasDto) {
    return this.quotas.set(tenantId, null, body.quotas);
  }

  @Get('usage')
  @Access('operator')
  @ApiOperation({
    summary:
      'Usage of the runs started in [from, to) (default the last 30 days, at most 400), grouped by day (UTC), user, model or session: {from, to, groupBy, data: [{key, tenantId, runs, inputTokens, outputTokens, totalTokens, totalCost}]}; the admin sees every tenant or one (tenantId), a tenant key its own; every row names its tenant',
  })
  usage(@CurrentPrincipal() principal: Principal, @Query() query: UsageQueryDto) {
    return this.quotas.usage(principal, query);
  }
}
