// Admin routes (the admin key): tenants (create, list, with their retention policy) and their API keys.

import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CanopyException } from '@canopy/common';
import { Access, AuthService, TenantsRepository } from '@canopy/auth';
import { RetentionRepository, type TenantView } from '@canopy/store';
import { CreateKeyDto, CreateTenantDto, ListTenantsQueryDto, UpdateTenantDto } from './dto';

@ApiTags('admin')
@ApiBearerAuth()
@Access('admin')
@Controller('v1/admin')
export class AdminController {
  constructor(
    private readonly tenants: TenantsRepository,
    private readonly auth: AuthService,
    private readonly retention: RetentionRepository,
  ) {}

  @Post('tenants')
  @ApiOperation({ summary: 'Create a tenant; answers its first API key (shown once)' })
  async createTenant(@Body() body: CreateTenantDto) {
    const { tenant, apiKey } = await this.tenants.createTenant(body.name);
    return { id: tenant.id, name: tenant.name, apiKey };
  }

  @Get('tenants')
  @ApiOperation({ summary: 'List the tenants by name (`limit`, default 100, at most 1000)' })
  async listTenants(@Query() query: ListTenantsQueryDto) {
    const tenants = await this.tenants.listTenants(query.limit);
    return {
      data: tenants.map((t) => ({ id: t.id, name: t.name, createdAt: t.createdAt.toISOString() })),
    };
  }

  @Get('tenants/:tenantId')
  @ApiOperation({ summary: 'A tenant with its retention policy' })
  async getTenant(@Param('tenantId') tenantId: string) {
    const tenant = await this.retention.tenant(tenantId);
    if (!tenant) throw CanopyException.notFound('tenant');
    return tenantView(tenant);
  }

  @Patch('tenants/:tenantId')
  @ApiOperation({
    summary:
      'Set a tenant’s retention policy: {retention: {deleteAfterDays: days | null, keep: "pinned" | "none"}} — sessions not updated for that long are deleted by the sweeper',
  })
  async updateTenant(@Param('tenantId') tenantId: string, @Body() body: UpdateTenantDto) {
    return tenantView(await this.retention.setPolicy(tenantId, body.retention));
  }

  @Post('tenants/:tenantId/keys')
  @ApiOperation({ summary: 'Create another API key for a tenant (shown once)' })
  async createKey(@Param('tenantId') tenantId: string, @Body() body: CreateKeyDto) {
    return this.tenants.createKey(tenantId, body?.name ?? null);
  }

  @Delete('keys/:keyId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke an API key' })
  async revokeKey(@Param('keyId') keyId: string): Promise<void> {
    const key = await this.tenants.revokeKey(keyId);
    if (!key) throw CanopyException.notFound('key');
    this.auth.forgetKey(key.id);
  }
}

function tenantView(t: TenantView) {
  return { id: t.id, name: t.name, createdAt: t.createdAt.toISOString(), retention: t.retention };
}
