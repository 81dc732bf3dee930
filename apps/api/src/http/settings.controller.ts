// A tenant's settings (a tenant API key; user tokens answer 403): the defaults its new sessions take. GET shows
// them; PUT replaces the ones its body names (null removes one) and leaves the others. A session created without
// `opts.context` takes the default context policy at creation, one without `opts.mcpServers` the default MCP servers:
// changing them affects new sessions only.

import { Body, Controller, Get, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Scope } from '@canopy/core';
import { Access, CurrentScope } from '@canopy/auth';
import { TenantSettingsService } from '@canopy/manager';
import { PutTenantSettingsDto, TenantSettingsViewDto } from './dto';

@ApiTags('settings')
@ApiBearerAuth()
@Access('tenant')
@Controller('v1/settings')
export class SettingsController {
  constructor(private readonly settings: TenantSettingsService) {}

  @Get()
  @ApiOperation({
    summary:
      'The tenant’s settings: the defaults its new sessions take, {context: policy | null, mcpServers: [names] | null, telemetryUserId: boolean, updatedAt}',
  })
  @ApiOkResponse({ type: TenantSettingsViewDto })
  get(@CurrentScope() scope: Scope) {
    return this.settings.get(scope);
  }

  @Put()
  @ApiOperation({
    summary:
      'Set the tenant’s settings: {context?: policy | null, mcpServers?: [names] | null, telemetryUserId?: boolean} (the context policy of a session created without opts.context, the MCP servers of one created without opts.mcpServers, copied into its opts at creation: a change affects new sessions only; telemetryUserId: whether the end user’s id may be on the OpenTelemetry spans of runs started with a user token, where the operator records it; null removes one; a field left out stays as it is). 400 on a policy opts.context would refuse (context.summaryModel: a model the tenant can use) and on a name that is not one of the tenant’s MCP servers (mcpServers.<i>); audited as settings.update',
  })
  @ApiOkResponse({ type: TenantSettingsViewDto })
  put(@CurrentScope() scope: Scope, @Body() body: PutTenantSettingsDto) {
    return this.settings.update(scope, body);
  }
}
