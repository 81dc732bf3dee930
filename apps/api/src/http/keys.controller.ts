// A tenant's own API keys (a tenant API key): list, create (shown once), revoke (its connections and those of the
// user tokens it minted are closed, in every api process). User tokens have no access.

import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Scope } from '@canopy/core';
import { Access, CurrentScope } from '@canopy/auth';
import { ApiKeysService } from '@canopy/tenancy';
import { createdKeyView, keyView } from './admin.controller';
import { CreateKeyDto } from './dto';

@ApiTags('keys')
@ApiBearerAuth()
@Access('tenant')
@Controller('v1/keys')
export class KeysController {
  constructor(private readonly keys: ApiKeysService) {}

  @Get()
  @ApiOperation({
    summary: 'The tenant’s API keys (prefix, name, created, last used, expiry, revoked), newest first',
  })
  async list(@CurrentScope() scope: Scope) {
    return { data: (await this.keys.list(scope.tenantId)).map(keyView) };
  }

  @Post()
  @ApiOperation({ summary: 'Create an API key for the tenant: {name?, expiresAt?} (the key is shown once)' })
  async create(@CurrentScope() scope: Scope, @Body() body: CreateKeyDto) {
    return createdKeyView(
      await this.keys.create(scope.tenantId, {
        name: body?.name ?? null,
        expiresAt: body?.expiresAt ? new Date(body.expiresAt) : null,
      }),
    );
  }

  @Delete(':keyId')
  @HttpCode(204)
  @ApiOperation({
    summary:
      'Revoke one of the tenant’s API keys (the calling key included): it and the user tokens it minted answer 401 at once, and their open WebSockets and SSE streams are closed',
  })
  revoke(@CurrentScope() scope: Scope, @Param('keyId') keyId: string): Promise<void> {
    return this.keys.revoke(keyId, scope.tenantId);
  }
}
