import { loadConfig } from '@canopy/common';
import { listModels } from './model-catalog';

describe('listModels', () => {
  it("says each model's context window and output limit: the table's, MODEL_LIMITS', none for the mocks", () => {
    const models = listModels(
      loadConfig({
        OPENAI_API_KEY: 'sk-test',
        OPENAI_MODELS: 'gpt-4.1,gpt-4o-mini-2024-07-18,gpt-next',
        OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:11434/v1',
        OPENAI_COMPATIBLE_MODELS: 'llama3.1:8b,qwen2.5:7b',
        MODEL_LIMITS: 'openai-compatible:llama3.1:8b=131072/4096',
      }),
    );
    expect(models.map((m) => [m.id, m.contextWindow, m.maxOutputTokens])).toEqual([
      ['mock:echo', null, null],
      ['mock:script', null, null],
      ['openai:gpt-4.1', 1_047_576, 32_768],
      ['openai:gpt-4o-mini-2024-07-18', 128_000, 16_384],
      ['openai:gpt-next', null, null],
      ['openai-compatible:llama3.1:8b', 131_072, 4_096],
      ['openai-compatible:qwen2.5:7b', null, null],
    ]);
  });
});
