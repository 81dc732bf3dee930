// A tenant's webhook endpoints (a tenant API key): create (the signing secret is shown once), list, read, update,
// delete, and each endpoint's deliveries with their attempts, one of which may be sent again. URLs that are or
// resolve to loopback, private, link-local or reserved addresses are refused (400 on `url`) unless the operator
// allows them (ALLOW_PRIVATE_TARGETS, WEBHOOK_ALLOW_PRIVATE); every send checks again.

import { randomBytes } from 'node:crypto';
import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { assertTargetAllowed, CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import type { Scope } from '@canopy/core';
import { Access, CurrentScope } from '@canopy/auth';
import { WebhooksRepository } from '@canopy/store';
import { CreateWebhookDto, ListDeliveriesQueryDto, UpdateWebhookDto } from './dto';

@ApiTags('webhooks')
@ApiBearerAuth()
@Access('tenant')
@Controller('v1/webhooks')
export class WebhooksController {
  constructor(
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
    private readonly webhooks: WebhooksRepository,
  ) {}

  @Post()
  @ApiOperation({
    summary:
      'Create a webhook endpoint {url, events, enabled?, description?}; answers it with its signing `secret` (whsec_…, shown once). Deliveries follow Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature)',
  })
  async create(@CurrentScope() scope: Scope, @Body() body: CreateWebhookDto) {
    await this.checkUrl(body.url);
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const created = await this.webhooks.create(scope, {
      url: body.url,
      events: [...new Set(body.events)],
      enabled: body.enabled,
      description: body.description ?? null,
      secret,
    });
    return { ...created, secret };
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
  async update(
    @CurrentScope() scope: Scope,
    @Param('webhookId') webhookId: string,
    @Body() body: UpdateWebhookDto,
  ) {
    if (body.url !== undefined) await this.checkUrl(body.url);
    return this.webhooks.update(scope, webhookId, {
      ...(body.url !== undefined ? { url: body.url } : {}),
      ...(body.events !== undefined ? { events: [...new Set(body.events)] } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
    });
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

  private checkUrl(url: string): Promise<void> {
    return assertTargetAllowed(url, this.config.targets.webhooks, 'url', 'webhook URL');
  }
}
