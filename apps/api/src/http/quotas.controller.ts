// Quotas and usage. The admin sets a tenant's quotas (/v1/admin/tenants/:id/quotas); a tenant sets its users'
// (/v1/quotas/users/:userId) and reads all of its own with their usage in the current period. GET /v1/usage sums
// the stored runs' usage over a window, grouped by day, user, model or session: a tenant key its own, the admin any
// tenant's or every tenant's.

import { Body, Controller, Get, Param, Put, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CanopyException } from '@canopy/common';
import type { Scope } from '@canopy/core';
import { Access, CurrentPrincipal, CurrentScope, type Principal } from '@canopy/auth';
import { QuotasRepository, type QuotaStatus } from '@canopy/store';
import { PutQuotasDto, UsageQueryDto } from './dto';

const DEFAULT_USAGE_DAYS = 30;
const MAX_USAGE_DAYS = 400;

@ApiTags('quotas')
@ApiBearerAuth()
@Controller('v1')
export class QuotasController {
  constructor(private readonly quotas: QuotasRepository) {}

  @Get('quotas')
  @Access('tenant')
  @ApiOperation({
    summary:
      'The tenant’s quotas (set by the admin) and its users’ (set by the tenant), each with its usage in the current period and when it resets',
  })
  async list(@CurrentScope() scope: Scope) {
    return quotaLists(await this.quotas.status(scope.tenantId));
  }

  @Put('quotas/users/:userId')
  @Access('tenant')
  @ApiOperation({
    summary:
      'Set one user’s quotas: {quotas: [{metric: "tokens" | "cost" | "runs", period: "day" | "month", limit}]} (replaces them; [] removes them)',
  })
  async setUser(@CurrentScope() scope: Scope, @Param('userId') userId: string, @Body() body: PutQuotasDto) {
    if (userId.length > 200) throw CanopyException.badRequest('userId is too long', { field: 'userId' });
    await this.quotas.set(scope.tenantId, userId, body.quotas);
    return quotaLists(await this.quotas.status(scope.tenantId));
  }

  @Get('admin/tenants/:tenantId/quotas')
  @Access('admin')
  @ApiOperation({ summary: 'A tenant’s quotas and its users’, with their usage in the current period' })
  async adminList(@Param('tenantId') tenantId: string) {
    return quotaLists(await this.quotas.status(tenantId));
  }

  @Put('admin/tenants/:tenantId/quotas')
  @Access('admin')
  @ApiOperation({
    summary:
      'Set a tenant’s quotas: {quotas: [{metric: "tokens" | "cost" | "runs", period: "day" | "month", limit}]} (replaces them; [] removes them). A prompt over one answers 429 quota_exceeded',
  })
  async adminSet(@Param('tenantId') tenantId: string, @Body() body: PutQuotasDto) {
    await this.quotas.set(tenantId, null, body.quotas);
    return quotaLists(await this.quotas.status(tenantId));
  }

  @Get('usage')
  @Access('operator')
  @ApiOperation({
    summary:
      'Usage of the runs started in [from, to) (default the last 30 days, at most 400), grouped by day (UTC), user, model or session: {from, to, groupBy, data: [{key, tenantId, runs, inputTokens, outputTokens, totalTokens, totalCost}]}; the admin sees every tenant or one (tenantId), a tenant key its own; every row names its tenant',
  })
  async usage(@CurrentPrincipal() principal: Principal, @Query() query: UsageQueryDto) {
    const to = query.to ? new Date(query.to) : new Date();
    const from = query.from ? new Date(query.from) : new Date(to.getTime() - DEFAULT_USAGE_DAYS * 86_400_000);
    if (from.getTime() >= to.getTime())
      throw CanopyException.badRequest('from must be before to', { field: 'from' });
    if (to.getTime() - from.getTime() > MAX_USAGE_DAYS * 86_400_000)
      throw CanopyException.badRequest(`at most ${MAX_USAGE_DAYS} days at once`, { field: 'from' });
    let tenantId: string | null;
    if (principal.kind === 'admin') tenantId = query.tenantId ?? null;
    else if (principal.kind === 'tenant') {
      if (query.tenantId !== undefined && query.tenantId !== principal.tenantId)
        throw CanopyException.badRequest('tenantId is for the admin key', { field: 'tenantId' });
      tenantId = principal.tenantId;
    } else throw new CanopyException('forbidden', 'this route needs a tenant API key or the admin key');
    const data = await this.quotas.usage(tenantId, { from, to, groupBy: query.groupBy });
    return { from: from.toISOString(), to: to.toISOString(), groupBy: query.groupBy, data };
  }
}

function quotaLists(all: QuotaStatus[]) {
  const view = (q: QuotaStatus) => ({
    metric: q.metric,
    period: q.period,
    limit: q.limit,
    usage: q.usage,
    resetsAt: q.resetsAt,
  });
  const users = new Map<string, ReturnType<typeof view>[]>();
  for (const q of all) if (q.userId !== null) users.set(q.userId, [...(users.get(q.userId) ?? []), view(q)]);
  return {
    tenant: all.filter((q) => q.userId === null).map(view),
    users: [...users].map(([userId, quotas]) => ({ userId, quotas })),
  };
}
