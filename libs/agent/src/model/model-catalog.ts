// The models a deployment offers (GET /v1/models, the playground's model picker): the built-in mocks, always, and
// for each configured provider the names its configuration lists (ANTHROPIC_MODELS, OPENAI_MODELS,
// OPENAI_COMPATIBLE_MODELS). A provider without its key (or base URL) lists nothing: its models would not run.
// Each says its context window and output limit where known (model-limits.ts); the mocks' are a session's opts.

import type { CanopyConfig } from '@canopy/common';
import type { ModelInfo } from '@canopy/core';
import type { ModelProvider } from './model-id';
import { modelLimits } from './model-limits';

const MOCKS: ModelInfo[] = [
  {
    id: 'mock:echo',
    provider: 'mock',
    name: 'echo',
    tools: false,
    contextWindow: null,
    maxOutputTokens: null,
    description:
      'Built in: answers "Echo: <your message>" word by word. opts: delayMs (per word), numbered (regenerations differ), contextWindow and maxOutputTokens (its limits; none by default).',
  },
  {
    id: 'mock:script',
    provider: 'mock',
    name: 'script',
    tools: true,
    contextWindow: null,
    maxOutputTokens: null,
    description:
      'Built in: plays opts.script, one entry per model call ({text}, {toolCalls}, {thinking}, {error}, {delayMs}); opts.contextWindow and opts.maxOutputTokens give its limits (none by default).',
  },
];

export function listModels(config: Pick<CanopyConfig, 'providers' | 'models' | 'modelLimits'>): ModelInfo[] {
  const p = config.providers;
  const offered: Array<[Exclude<ModelProvider, 'mock'>, boolean, readonly string[]]> = [
    ['anthropic', p.anthropic.apiKey !== null, config.models.anthropic],
    ['openai', p.openai.apiKey !== null, config.models.openai],
    ['openai-compatible', p.openaiCompatible.baseUrl !== null, config.models.openaiCompatible],
  ];
  const models = [...MOCKS];
  for (const [provider, configured, names] of offered) {
    if (!configured) continue;
    for (const name of names) {
      // Provider models are called with the session's tools (client tools and enabled server tools).
      const id = `${provider}:${name}`;
      models.push({
        id,
        provider,
        name,
        tools: true,
        ...modelLimits(id, {}, config.modelLimits),
        description: null,
      });
    }
  }
  return models;
}
