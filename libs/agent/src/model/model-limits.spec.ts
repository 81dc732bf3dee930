import { loadConfig } from '@canopy/common';
import { modelLimits } from './model-limits';

const none = new Map<string, never>();
const limits = (
  model: string,
  opts: Record<string, unknown> = {},
  configured: ReadonlyMap<string, never> = none,
) => modelLimits(model, opts, configured);

describe('modelLimits', () => {
  it('knows the listed models by their exact names', () => {
    expect(limits('anthropic:claude-sonnet-4-5')).toEqual({
      contextWindow: 200_000,
      maxOutputTokens: 64_000,
    });
    expect(limits('anthropic:claude-haiku-4-5')).toEqual({ contextWindow: 200_000, maxOutputTokens: 64_000 });
    expect(limits('anthropic:claude-opus-4-1')).toEqual({ contextWindow: 200_000, maxOutputTokens: 32_000 });
    expect(limits('anthropic:claude-3-5-haiku')).toEqual({ contextWindow: 200_000, maxOutputTokens: 8_192 });
    expect(limits('openai:gpt-4.1-nano')).toEqual({ contextWindow: 1_047_576, maxOutputTokens: 32_768 });
    expect(limits('openai:gpt-4o-mini')).toEqual({ contextWindow: 128_000, maxOutputTokens: 16_384 });
    expect(limits('openai:o4-mini')).toEqual({ contextWindow: 200_000, maxOutputTokens: 100_000 });
    expect(limits('openai:gpt-5-mini')).toEqual({ contextWindow: 400_000, maxOutputTokens: 128_000 });
  });

  it('matches dated and suffixed variants by their longest listed prefix', () => {
    expect(limits('anthropic:claude-sonnet-4-5-20250929')).toEqual(limits('anthropic:claude-sonnet-4-5'));
    expect(limits('anthropic:claude-opus-4-1-20250805').maxOutputTokens).toBe(32_000);
    expect(limits('anthropic:claude-sonnet-4-20250514').maxOutputTokens).toBe(64_000);
    expect(limits('anthropic:claude-opus-4-0').maxOutputTokens).toBe(32_000);
    expect(limits('anthropic:claude-3-5-haiku-latest').maxOutputTokens).toBe(8_192);
    expect(limits('openai:gpt-4.1-2025-04-14')).toEqual(limits('openai:gpt-4.1'));
    // gpt-4.1-mini, not gpt-4.1; gpt-4o-mini, not gpt-4o.
    expect(limits('openai:gpt-4.1-mini-2025-04-14')).toEqual(limits('openai:gpt-4.1-mini'));
    expect(limits('openai:gpt-4o-2024-08-06').contextWindow).toBe(128_000);
    expect(limits('openai:o3-mini')).toEqual({ contextWindow: 200_000, maxOutputTokens: 100_000 });
  });

  it('knows nothing of other models, of a listed name under another provider, or of a malformed id', () => {
    const unknown = { contextWindow: null, maxOutputTokens: null };
    for (const model of [
      'openai:gpt-4', // not a prefix of a listed name followed by '-'
      'openai:gpt-5.1', // another model than gpt-5
      'anthropic:claude-opus-4x',
      'openai:claude-sonnet-4-5',
      'openai-compatible:llama3.1:8b',
      'mock:echo',
      'mock:script',
      'nonsense',
      'acme:model',
    ])
      expect([model, limits(model)]).toEqual([model, unknown]);
  });

  it('takes MODEL_LIMITS before the table, figure by figure', () => {
    const { modelLimits: configured } = loadConfig({
      MODEL_LIMITS:
        'openai-compatible:llama3.1:8b=131072/4096,openai:gpt-4.1=500000,anthropic:claude-next=300000/20000',
    });
    expect(modelLimits('openai-compatible:llama3.1:8b', {}, configured)).toEqual({
      contextWindow: 131_072,
      maxOutputTokens: 4_096,
    });
    // A window alone keeps the table's output limit.
    expect(modelLimits('openai:gpt-4.1', {}, configured)).toEqual({
      contextWindow: 500_000,
      maxOutputTokens: 32_768,
    });
    expect(modelLimits('anthropic:claude-next', {}, configured)).toEqual({
      contextWindow: 300_000,
      maxOutputTokens: 20_000,
    });
    // The key is the whole "provider:name": a dated variant of a configured name is not it.
    expect(modelLimits('openai:gpt-4.1-2025-04-14', {}, configured).contextWindow).toBe(1_047_576);
  });

  it("takes a session's opts.contextWindow and opts.maxOutputTokens for the mocks only", () => {
    const opts = { contextWindow: 1_000, maxOutputTokens: 100 };
    expect(limits('mock:echo', opts)).toEqual({ contextWindow: 1_000, maxOutputTokens: 100 });
    expect(limits('mock:script', { contextWindow: 2_000 })).toEqual({
      contextWindow: 2_000,
      maxOutputTokens: null,
    });
    // A real provider's limits are not the session's to claim.
    expect(limits('openai:gpt-4.1', opts)).toEqual(limits('openai:gpt-4.1'));
    expect(limits('openai-compatible:llama3.1:8b', opts)).toEqual({
      contextWindow: null,
      maxOutputTokens: null,
    });
    // Anything but a positive integer is no figure.
    for (const contextWindow of [0, -5, 1.5, '1000', null, Number.POSITIVE_INFINITY])
      expect(limits('mock:echo', { contextWindow }).contextWindow).toBeNull();
  });
});
