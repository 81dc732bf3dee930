// A tenant's webhook endpoints: create (with its signing secret, shown once), list, read, update, delete, and each
// endpoint's deliveries, one of which may be sent again. A URL that is or resolves to a loopback, private,
// link-local or reserved address is refused (400 on `url`) unless the operator allows it; every send checks again.

import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { assertTargetAllowed, CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import type { Scope } from '@canopy/core';
import { WebhooksRepository, type DeliveryView, type WebhookView } from './webhooks.repository';

export interface WebhookInput {
  url: string;
  events: string[];
  enabled: boolean;
  description?: string | null;
}

@Injectable()
export class WebhooksService {
  constructor(
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
    private readonly webhooks: WebhooksRepository,
  ) {}

  /** Creates an endpoint; answers it with its signing secret (the only time it is shown). */
  async create(scope: Scope, input: WebhookInput): Promise<WebhookView & { secret: string }> {
    await this.checkUrl(input.url);
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const created = await this.webhooks.create(scope, {
      url: input.url,
      events: [...new Set(input.events)],
      enabled: input.enabled,
      description: input.description ?? null,
      secret,
    });
    return { ...created, secret };
  }

  list(scope: Scope): Promise<WebhookView[]> {
    return this.webhooks.list(scope);
  }

  get(scope: Scope, webhookId: string): Promise<WebhookView> {
    return this.webhooks.get(scope, webhookId);
  }

  async update(scope: Scope, webhookId: string, input: Partial<WebhookInput>): Promise<WebhookView> {
    if (input.url !== undefined) await this.checkUrl(input.url);
    return this.webhooks.update(scope, webhookId, {
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.events !== undefined ? { events: [...new Set(input.events)] } : {}),
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
    });
  }

  delete(scope: Scope, webhookId: string): Promise<void> {
    return this.webhooks.delete(scope, webhookId);
  }

  deliveries(
    scope: Scope,
    webhookId: string,
    filter: { status?: DeliveryView['status']; limit: number },
  ): Promise<DeliveryView[]> {
    return this.webhooks.deliveries(scope, webhookId, filter);
  }

  /** Sends a delivery again, now. */
  retry(scope: Scope, webhookId: string, deliveryId: string): Promise<DeliveryView> {
    return this.webhooks.retry(scope, webhookId, deliveryId);
  }

  private checkUrl(url: string): Promise<void> {
    return assertTargetAllowed(url, this.config.targets.webhooks, 'url', 'webhook URL');
  }
}
