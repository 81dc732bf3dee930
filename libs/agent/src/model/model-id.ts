// "provider:model" strings: the one parser, and what is wrong with a string that does not name a usable model.

import type { ModelErrorCode } from './model-gateway.port';

export const AI_SDK_PROVIDERS = ['anthropic', 'openai', 'openai-compatible'] as const;
export type AiSdkProvider = (typeof AI_SDK_PROVIDERS)[number];
export const MODEL_PROVIDERS = [...AI_SDK_PROVIDERS, 'mock'] as const;
export type ModelProvider = (typeof MODEL_PROVIDERS)[number];

export interface ModelId {
  provider: ModelProvider;
  name: string;
}

export interface ModelProblem {
  code: Extract<ModelErrorCode, 'bad_model_request' | 'model_not_found' | 'not_configured'>;
  message: string;
}

/** Splits at the first colon (model names may contain more, e.g. "openai-compatible:llama3:8b"). */
export function parseModelId(model: string): ModelId | ModelProblem {
  const colon = model.indexOf(':');
  if (colon <= 0) {
    return { code: 'bad_model_request', message: `model "${model}" is not of the form "provider:model"` };
  }
  const provider = model.slice(0, colon);
  const name = model.slice(colon + 1).trim();
  if (!(MODEL_PROVIDERS as readonly string[]).includes(provider)) {
    return {
      code: 'model_not_found',
      message: `unknown model provider "${provider}" (known: ${MODEL_PROVIDERS.join(', ')})`,
    };
  }
  if (name === '') return { code: 'bad_model_request', message: `model "${model}" names no model` };
  return { provider: provider as ModelProvider, name };
}

export function isModelProblem<T extends object>(value: T | ModelProblem): value is ModelProblem {
  return 'code' in value;
}
