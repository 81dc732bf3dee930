// How many tokens a model takes in (its context window) and gives out (its output limit): a built-in table of the
// known providers' models, the deployment's MODEL_LIMITS for the others (and corrections), and for the mock models a
// session's own opts, so tests can give a mock any window. null: unknown (the context is then sent whole).

import type { CanopyConfig } from '@canopy/common';
import { isModelProblem, parseModelId } from './model-id';

export interface ModelLimits {
  contextWindow: number | null;
  maxOutputTokens: number | null;
}

const UNKNOWN: ModelLimits = { contextWindow: null, maxOutputTokens: null };

/**
 * The providers' published figures (Anthropic's "Models overview", OpenAI's model pages), by model name. A dated or
 * suffixed variant takes the entry of its longest listed prefix ending at a '-': `claude-sonnet-4-5-20250929` is
 * `claude-sonnet-4-5`, `gpt-4.1-mini-2025-04-14` is `gpt-4.1-mini`, `o3-mini` is `o3`; `gpt-5.1` is not `gpt-5`.
 * Extended windows behind beta headers (Claude's 1M) are not assumed.
 */
const BUILT_IN: Readonly<Record<'anthropic' | 'openai', Readonly<Record<string, ModelLimits>>>> = {
  anthropic: {
    'claude-opus-4-1': { contextWindow: 200_000, maxOutputTokens: 32_000 },
    'claude-opus-4': { contextWindow: 200_000, maxOutputTokens: 32_000 },
    'claude-sonnet-4-5': { contextWindow: 200_000, maxOutputTokens: 64_000 },
    'claude-sonnet-4': { contextWindow: 200_000, maxOutputTokens: 64_000 },
    'claude-haiku-4-5': { contextWindow: 200_000, maxOutputTokens: 64_000 },
    'claude-3-7-sonnet': { contextWindow: 200_000, maxOutputTokens: 64_000 },
    'claude-3-5-haiku': { contextWindow: 200_000, maxOutputTokens: 8_192 },
  },
  openai: {
    'gpt-4.1': { contextWindow: 1_047_576, maxOutputTokens: 32_768 },
    'gpt-4.1-mini': { contextWindow: 1_047_576, maxOutputTokens: 32_768 },
    'gpt-4.1-nano': { contextWindow: 1_047_576, maxOutputTokens: 32_768 },
    'gpt-4o': { contextWindow: 128_000, maxOutputTokens: 16_384 },
    'gpt-4o-mini': { contextWindow: 128_000, maxOutputTokens: 16_384 },
    o3: { contextWindow: 200_000, maxOutputTokens: 100_000 },
    'o4-mini': { contextWindow: 200_000, maxOutputTokens: 100_000 },
    'gpt-5': { contextWindow: 400_000, maxOutputTokens: 128_000 },
    'gpt-5-mini': { contextWindow: 400_000, maxOutputTokens: 128_000 },
    'gpt-5-nano': { contextWindow: 400_000, maxOutputTokens: 128_000 },
  },
};

/** The built-in entry of a provider's model: exact name, else the longest listed prefix followed by '-'. */
function builtInModelLimits(provider: string, name: string): ModelLimits {
  const table = provider === 'anthropic' || provider === 'openai' ? BUILT_IN[provider] : undefined;
  if (table === undefined) return UNKNOWN;
  const exact = table[name];
  if (exact !== undefined) return exact;
  let best: string | null = null;
  for (const listed of Object.keys(table)) {
    if (name.startsWith(`${listed}-`) && (best === null || listed.length > best.length)) best = listed;
  }
  return best === null ? UNKNOWN : table[best]!;
}

/** A positive integer, or null for anything else (an absent or malformed option leaves the figure unset). */
function positiveInteger(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null;
}

/**
 * The limits of a "provider:name" model, each figure from the first source that has it: the session's
 * `opts.contextWindow` / `opts.maxOutputTokens` (mock models only: a real provider's window is not the session's to
 * claim), then the deployment's MODEL_LIMITS, then the built-in table; null when none does.
 */
export function modelLimits(
  model: string,
  opts: Readonly<Record<string, unknown>>,
  configured: CanopyConfig['modelLimits'],
): ModelLimits {
  const id = parseModelId(model);
  if (isModelProblem(id)) return UNKNOWN;
  const own = id.provider === 'mock';
  const entry = configured.get(`${id.provider}:${id.name}`);
  const builtIn = builtInModelLimits(id.provider, id.name);
  return {
    contextWindow:
      (own ? positiveInteger(opts.contextWindow) : null) ?? entry?.contextWindow ?? builtIn.contextWindow,
    maxOutputTokens:
      (own ? positiveInteger(opts.maxOutputTokens) : null) ??
      entry?.maxOutputTokens ??
      builtIn.maxOutputTokens,
  };
}
