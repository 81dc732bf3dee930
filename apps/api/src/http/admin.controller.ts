// Admin routes (the admin key): tenants (create, list and search, rename, disable, retention policy) and their
// API keys, through the tenants feature's use cases (@canopy/tenancy). Disabling a tenant cancels its runs in
// flight; its credentials then answer 403 tenant_disabled and its open connections are closed, in every api
// process (as are those of a revoked key).

import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access } from '@canopy/auth';
import {
  ApiKeysService,
  TenantsService,
  type CreatedKey,
  type KeyView,
  type TenantView,
} from '@canopy/tenancy';
import { CreateKeyDto, CreateTenantDto, ListTenantsQueryDto, UpdateTenantDto } from './dto';

@ApiTags('admin')
@ApiBearerAuth()
@Access('admin')
@Controller('v1/admin')
export class AdminController {
  constructor(
    private readonly tenants: TenantsService,
    private readonly keys: ApiKeysService,
  ) {}

  @Post('tenants')
  @ApiOperation({
    summary:
      'Create a tenant; answers its first API key (shown once). Tenant names are unique case-insensitively: a taken one answers 409 tenant_name_taken',
  })
  async createTenant(@Body() body: CreateTenantDto) {
    const { tenant, apiKey } = await this.tenants.create(body.name);
    return { id: tenant.id, name: tenant.name, apiKey };
  }

  @Get('tenants')
  @ApiOperation({
    summary:
      'List the tenants by name, a page at a time (`limit`, default 100, at most 1000; `cursor`: the previous page’s nextCursor; `q`: name contains, case-insensitive)',
  })
  async listTenants(@Query() query: ListTenantsQueryDto) {
    const page = await this.tenants.list({
      limit: query.limit,
      ...(query.q !== undefined ? { q: query.q } : {}),
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
    });
    return {
      data: page.data.map((t) => ({
        id: t.id,
        name: t.name,
        createdAt: t.createdAt.toISOString(),
        disabled: t.disabledAt !== null,
      })),
      nextCursor: page.nextCursor,
    };
  }

  @Get('tenants/:tenantId')
  @ApiOperation({ summary: 'A tenant with its state and retention policy' })
  async getTenant(@Param('tenantId') tenantId: string) {
    return tenantView(await this.tenants.get(tenantId));
  }

  @Patch('tenants/:tenantId')
  @ApiOperation({
    summary:
      'Update a tenant: {name?, disabled?, retention?: {deleteAfterDays: days | null, keep: "pinned" | "none"}}. A name another tenant has (case-insensitively) answers 409 tenant_name_taken. Disabling cancels its runs in flight, makes every credential of it answer 403 tenant_disabled and closes its open WebSockets and SSE streams; retention: sessions not updated for that long are deleted by the sweeper',
  })
  async updateTenant(@Param('tenantId') tenantId: string, @Body() body: UpdateTenantDto) {
    return tenantView(
      await this.tenants.update(tenantId, {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.disabled !== undefined ? { disabled: body.disabled } : {}),
        ...(body.retention !== undefined ? { retention: body.retention } : {}),
      }),
    );
  }

  @Get('tenants/:tenantId/keys')
  @ApiOperation({
    summary: 'A tenant’s API keys (prefix, name, created, last used, expiry, revoked), newest first',
  })
  async listKeys(@Param('tenantId') tenantId: string) {
    return { data: (await this.keys.list(tenantId)).map(keyView) };
  }

  @Post('tenants/:tenantId/keys')
  @ApiOperation({
    summary: 'Create another API key for a tenant: {name?, expiresAt?} (the key is shown once)',
  })
  async createKey(@Param('tenantId') tenantId: string, @Body() body: CreateKeyDto) {
    return createdKeyView(
      await this.keys.create(tenantId, {
        name: body?.name ?? null,
        expiresAt: body?.expiresAt ? new Date(body.expiresAt) : null,
      }),
    );
  }

  @Delete('keys/:keyId')
  @HttpCode(204)
  @ApiOperation({
    summary:
      'Revoke an API key: it and the user tokens it minted answer 401 at once, and their open WebSockets and SSE streams are closed',
  })
  revokeKey(@Param('keyId') keyId: string): Promise<void> {
    return this.keys.revoke(keyId);
  }
}

function tenantView(t: TenantView) {
  return {
    id: t.id,
    name: t.name,
    createdAt: t.createdAt.toISOString(),
    disabled: t.disabledAt !== null,
    disabledAt: t.disabledAt?.toISOString() ?? null,
    retention: t.retention,
  };
}

export function keyView(k: KeyView) {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
    expiresAt: k.expiresAt?.toISOString() ?? null,
    revokedAt: k.revokedAt?.toISOString() ?? null,
    revoked: k.revokedAt !== null,
  };
}

export function createdKeyView(k: CreatedKey) {
  return {
    id: k.id,
    apiKey: k.apiKey,
    prefix: k.prefix,
    name: k.name,
    expiresAt: k.expiresAt?.toISOString() ?? null,
  };
}
