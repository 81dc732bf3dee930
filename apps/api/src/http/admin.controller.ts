// Admin routes (the admin key): tenants (create, list and search, rename, disable, retention policy) and their
// API keys. Disabling a tenant cancels its runs in flight; its credentials then answer 403 tenant_disabled and its
// open connections are closed, in every api process (as are those of a revoked key).

import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CanopyException } from '@canopy/common';
import { tenantScope } from '@canopy/core';
import { Access, TenantsRepository, type KeyView } from '@canopy/auth';
import { SessionCatalogService } from '@canopy/manager';
import { RetentionRepository, type TenantView } from '@canopy/store';
import { CredentialWatch } from './credential-watch';
import { CreateKeyDto, CreateTenantDto, ListTenantsQueryDto, UpdateTenantDto } from './dto';

/** At most this many bulk cancels (of 500 runs each) when a tenant is disabled. */
const DISABLE_CANCEL_ROUNDS = 20;

@ApiTags('admin')
@ApiBearerAuth()
@Access('admin')
@Controller('v1/admin')
export class AdminController {
  constructor(
    private readonly tenants: TenantsRepository,
    private readonly credentials: CredentialWatch,
    private readonly retention: RetentionRepository,
    private readonly catalog: SessionCatalogService,
  ) {}

  @Post('tenants')
  @ApiOperation({
    summary:
      'Create a tenant; answers its first API key (shown once). Tenant names are unique case-insensitively: a taken one answers 409 tenant_name_taken',
  })
  async createTenant(@Body() body: CreateTenantDto) {
    const { tenant, apiKey } = await this.tenants.createTenant(body.name);
    return { id: tenant.id, name: tenant.name, apiKey };
  }

  @Get('tenants')
  @ApiOperation({
    summary:
      'List the tenants by name, a page at a time (`limit`, default 100, at most 1000; `cursor`: the previous page’s nextCursor; `q`: name contains, case-insensitive)',
  })
  async listTenants(@Query() query: ListTenantsQueryDto) {
    const page = await this.tenants.listTenants({
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
    const tenant = await this.retention.tenant(tenantId);
    if (!tenant) throw CanopyException.notFound('tenant');
    return tenantView(tenant);
  }

  @Patch('tenants/:tenantId')
  @ApiOperation({
    summary:
      'Update a tenant: {name?, disabled?, retention?: {deleteAfterDays: days | null, keep: "pinned" | "none"}}. A name another tenant has (case-insensitively) answers 409 tenant_name_taken. Disabling cancels its runs in flight, makes every credential of it answer 403 tenant_disabled and closes its open WebSockets and SSE streams; retention: sessions not updated for that long are deleted by the sweeper',
  })
  async updateTenant(@Param('tenantId') tenantId: string, @Body() body: UpdateTenantDto) {
    if (body.name !== undefined || body.disabled !== undefined) {
      await this.tenants.updateTenant(tenantId, {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.disabled !== undefined ? { disabled: body.disabled } : {}),
      });
      if (body.disabled !== undefined) await this.credentials.tenantChanged(tenantId, body.disabled);
    }
    if (body.retention) await this.retention.setPolicy(tenantId, body.retention);
    if (body.disabled === true) {
      const scope = tenantScope(tenantId);
      for (let round = 0; round < DISABLE_CANCEL_ROUNDS; round++) {
        const { more } = await this.catalog.cancelMany(scope, { filter: {} });
        if (!more) break;
      }
    }
    return this.getTenant(tenantId);
  }

  @Get('tenants/:tenantId/keys')
  @ApiOperation({
    summary: 'A tenant’s API keys (prefix, name, created, last used, expiry, revoked), newest first',
  })
  async listKeys(@Param('tenantId') tenantId: string) {
    return { data: (await this.tenants.listKeys(tenantId)).map(keyView) };
  }

  @Post('tenants/:tenantId/keys')
  @ApiOperation({
    summary: 'Create another API key for a tenant: {name?, expiresAt?} (the key is shown once)',
  })
  async createKey(@Param('tenantId') tenantId: string, @Body() body: CreateKeyDto) {
    return createdKeyView(
      await this.tenants.createKey(tenantId, {
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
  async revokeKey(@Param('keyId') keyId: string): Promise<void> {
    const key = await this.tenants.revokeKey(keyId);
    if (!key) throw CanopyException.notFound('key');
    await this.credentials.keyRevoked(key.tenantId, key.id);
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

export function createdKeyView(k: {
  id: string;
  apiKey: string;
  prefix: string;
  name: string | null;
  expiresAt: Date | null;
}) {
  return {
    id: k.id,
    apiKey: k.apiKey,
    prefix: k.prefix,
    name: k.name,
    expiresAt: k.expiresAt?.toISOString() ?? null,
  };
}
