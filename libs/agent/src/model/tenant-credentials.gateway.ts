// Bring your own key: a gateway in front of the others that gives a call the tenant's own provider key when the
// tenant stored one for that provider (GET/PUT /v1/providers/:provider), so the tenant's runs use it before the
// deployment's. The key is looked up per call (never cached here, never logged, never in an event).

import type { ModelCheckContext, ModelGateway, ModelRequest, ModelStreamPart } from './model-gateway.port';

/** Where a tenant's own provider keys come from (the store, decrypted). */
export interface TenantCredentialSource {
  credentials(tenantId: string, provider: string): Promise<{ apiKey: string; baseUrl: string | null } | null>;
}

const OWN_KEY_PROVIDERS = new Set(['anthropic', 'openai', 'openai-compatible']);

export class TenantCredentialsGateway implements ModelGateway {
  constructor(
    private readonly inner: ModelGateway,
    private readonly source: TenantCredentialSource,
  ) {}

  check(model: string, context?: ModelCheckContext): string | null {
    return this.inner.check(model, context);
  }

  stream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
    const provider = request.model.slice(0, Math.max(0, request.model.indexOf(':')));
    if (!request.tenantId || !OWN_KEY_PROVIDERS.has(provider)) return this.inner.stream(request);
    return this.withOwnKey(request.tenantId, provider, request);
  }

  private async *withOwnKey(
    tenantId: string,
    provider: string,
    request: ModelRequest,
  ): AsyncGenerator<ModelStreamPart> {
    const own = await this.source.credentials(tenantId, provider);
    yield* this.inner.stream(own ? { ...request, credentials: own } : request);
  }
}
