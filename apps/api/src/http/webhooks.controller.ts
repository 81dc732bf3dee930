// A tenant's webhook endpoints (a tenant API key): create (the signing secret is shown once), list, read, update,
// delete, and each endpoint's deliveries with their attempts, one of which may be sent again. URLs that are or
// resolve to loopback, private, link-local or reserved addresses are refused (400 on `url`) unless the operator
// allows them (ALLOW_PRIVATE_TARGETS, WEBHOOK_ALLOW_PRIVATE); every send checks again.

import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Scope } from '@canopy/core';
import { Access, CurrentScope } from '@canopy/auth';
import { WebhooksService } from '@canopy/tenancy';
import { CreateWebhookDto, ListDeliveriesQueryDto, UpdateWebhookDto } from './dto';

@ApiTags('webhooks')
@ApiBearerAuth()
@Access('tenant')
@Controller('v1/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @ApiOperation({
    summary:
      'Create a webhook endpoint {url, events, enabled?, description?}; answers it with its signing `secret` (whsec_…, shown once). Deliveries follow Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature)',
  })
  create(@CurrentScope() scope: Scope, @Body() body: CreateWebhookDto) {
    return this.webhooks.create(scope, body);
  }

  @Get()
  @ApiOperation({ summary: 'The tenant’s webhook endpoints, newest first (never their secrets)' })
  async list(@CurrentScope() scope: Scope) {
    return { data: await this.webhooks.list(scope) };
  }

  @Get(':webhookId')
  @ApiOperation({ summary: 'One webhook endpoint (disabledReason says why one was disabled)' })
  get(@CurrentScope() scope: Scope, @Param('webhookId') webhookId: string) {
    return this.webhooks.get(scope, webhookId);
  }

  @Patch(':webhookId')
  @ApiOperation({
    summary:
      'Update an endpoint {url?, events?, enabled?, description?}; disabling one settles its pending deliveries as failed (not sent, lastError says why); enabling one again clears its failure streak',
  })
  update(
    @CurrentScope() scope: Scope,
    @Param('webhookId') webhookId: string,
    @Body() body: UpdateWebhookDto,
  ) {
    return this.webhooks.update(scope, webhookId, body);
  }

  @Delete(':webhookId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete an endpoint (its pending deliveries with it)' })
  async delete(@CurrentScope() scope: Scope, @Param('webhookId') webhookId: string): Promise<void> {
    await this.webhooks.delete(scope, webhookId);
  }

  @Get(':webhookId/deliveries')
  @ApiOperation({
    summary:
      'An endpoint’s deliveries, newest first (`status`, `limit`): event, payload, status, attempts with their time, response code, latency and error',
  })
  async deliveries(
    @CurrentScope() scope: Scope,
    @Param('webhookId') webhookId: string,
    @Query() query: ListDeliveriesQueryDto,
  ) {
    return {
      data: await this.webhooks.deliveries(scope, webhookId, {
        limit: query.limit,
        ...(query.status ? { status: query.status } : {}),
      }),
    };
  }

  @Post(':webhookId/deliveries/:deliveryId/retry')
  @HttpCode(202)
  @ApiOperation({
    summary:
      'Send a delivery again (now), whatever its status (to a disabled endpoint it is settled as not sent again; one with an attempt in flight is settled by that attempt, no second one starts beside it)',
  })
  retry(
    @CurrentScope() scope: Scope,
    @Param('webhookId') webhookId: string,
    @Param('deliveryId') deliveryId: string,
  ) {
    return this.webhooks.retry(scope, webhookId, deliveryId);
  }
}
