// A tenant's own provider keys (bring your own key): store one (sealed at rest), read what is configured (never the
// key), remove it, and the models the tenant's keys add to the deployment's. A base URL that is or resolves to a
// loopback, private, link-local or reserved address is refused (400 on `baseUrl`) unless the operator allows it;
// every call to it is checked again.

import { Inject, Injectable } from '@nestjs/common';
import { assertTargetAllowed, CANOPY_CONFIG, CanopyException, type CanopyConfig } from '@canopy/common';
import type { ModelInfo, ProviderName, Scope } from '@canopy/core';
import { ProviderKeysRepository, type ProviderKeyView } from './provider-keys.repository';

@Injectable()
export class ProviderKeysService {
  constructor(
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
    private readonly keys: ProviderKeysRepository,
  ) {}

  list(scope: Pick<Scope, 'tenantId'>): Promise<ProviderKeyView[]> {
    return this.keys.list(scope);
  }

  /** Stores the tenant's key for a provider (an openai-compatible one needs its base URL). */
  async put(
    scope: Scope,
    provider: ProviderName,
    input: { apiKey: string; baseUrl?: string | null; models?: readonly string[] },
  ): Promise<ProviderKeyView> {
    if (provider === 'openai-compatible' && !input.baseUrl)
      throw CanopyException.badRequest('an openai-compatible provider needs its baseUrl', {
        field: 'baseUrl',
      });
    if (input.baseUrl)
      await assertTargetAllowed(input.baseUrl, this.config.targets.tenantUrls, 'baseUrl', 'provider baseUrl');
    return this.keys.put(scope, provider, {
      apiKey: input.apiKey,
      baseUrl: input.baseUrl ?? null,
      models: [...new Set(input.models)],
    });
  }

  get(scope: Scope, provider: ProviderName): Promise<ProviderKeyView> {
    return this.keys.get(scope, provider);
  }

  delete(scope: Scope, provider: ProviderName): Promise<void> {
    return this.keys.delete(scope, provider);
  }

  /**
   * The deployment's models followed by those the tenant's own keys list (each once; they take tools), with the
   * limits `limitsOf` gives each "provider:name" (the agent layer's table and MODEL_LIMITS, above this one).
   */
  async modelsFor(
    tenantId: string,
    deployment: readonly ModelInfo[],
    limitsOf: (model: string) => Pick<ModelInfo, 'contextWindow' | 'maxOutputTokens'>,
  ): Promise<ModelInfo[]> {
    const own = await this.keys.list({ tenantId });
    const known = new Set(deployment.map((m) => m.id));
    const added: ModelInfo[] = own.flatMap((p) =>
      p.models
        .map((name) => ({ id: `${p.provider}:${name}`, provider: p.provider, name }))
        .filter((m) => !known.has(m.id))
        .map((m) => ({ ...m, tools: true, ...limitsOf(m.id), description: 'With your own key' })),
    );
    return [...deployment, ...added];
  }
}
