// The ModelGateway the agent uses: routes "provider:model" to the built-in mocks or the AI SDK providers, and
// says up front whether a model string is usable with this configuration.

import type { CanopyConfig } from '@canopy/common';
import { AiSdkGateway } from './ai-sdk.gateway';
import { MockGateway } from './mock.gateway';
import {
  failedStream,
  ModelError,
  type ModelCheckContext,
  type ModelGateway,
  type ModelRequest,
  type ModelStreamPart,
} from './model-gateway.port';
import { isModelProblem, parseModelId } from './model-id';

type GatewayConfig = Pick<CanopyConfig, 'providers'> & Partial<Pick<CanopyConfig, 'targets'>>;

export class ModelRouter implements ModelGateway {
  constructor(
    private readonly mock: ModelGateway,
    private readonly aiSdk: ModelGateway,
  ) {}

  /** `targets`: where URLs given by tenants may lead (public addresses only when absent). */
  static fromConfig(config: GatewayConfig): ModelRouter {
    return new ModelRouter(new MockGateway(), new AiSdkGateway(config.providers, config.targets?.tenantUrls));
  }

  check(model: string, context?: ModelCheckContext): string | null {
    const id = parseModelId(model);
    if (isModelProblem(id)) return id.message;
    return this.route(id.provider).check(model, context);
  }

  stream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
    const id = parseModelId(request.model);
    if (isModelProblem(id)) {
      return failedStream(new ModelError(id.code, id.message, { retryable: false, streamed: false }));
    }
    return this.route(id.provider).stream(request);
  }

  private route(provider: string): ModelGateway {
    return provider === 'mock' ? this.mock : this.aiSdk;
  }
}

/** The gateway for a configuration, without Nest (the worker, scripts and tests build it directly). */
export function createModelGateway(config: GatewayConfig): ModelGateway {
  return ModelRouter.fromConfig(config);
}
