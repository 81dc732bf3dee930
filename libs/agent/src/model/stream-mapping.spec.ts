import type { TextStreamPart, ToolSet } from 'ai';
import { makeUsage } from '@canopy/core';
import type { ModelStreamPart } from './model-gateway.port';
import { StreamPartMapper } from './stream-mapping';

type SdkPart = TextStreamPart<ToolSet>;

function mapAll(parts: SdkPart[], reason: 'stop' | 'tool_use' = 'stop'): ModelStreamPart[] {
  const mapper = new StreamPartMapper();
  return [...parts.flatMap((p) => mapper.map(p)), ...mapper.finish(makeUsage(), reason)];
}

const toolCall = (toolCallId: string, toolName: string, input: unknown): SdkPart => ({
  type: 'tool-call',
  toolCallId,
  toolName,
  input,
  dynamic: true,
});

describe('StreamPartMapper', () => {
  it('ends an open text block when a tool call starts (OpenAI-compatible interleaving)', () => {
    const parts = mapAll([
      { type: 'start' },
      { type: 'text-start', id: 'txt-0' },
      { type: 'text-delta', id: 'txt-0', text: 'Checking' },
      { type: 'tool-input-start', id: 'call_1', toolName: 'search' },
      { type: 'tool-input-delta', id: 'call_1', delta: '{"q":"x"}' },
      { type: 'text-end', id: 'txt-0' },
      { type: 'tool-input-end', id: 'call_1' },
      toolCall('call_1', 'search', { q: 'x' }),
    ]);
    expect(parts.map((p) => p.type)).toEqual([
      'text_start',
      'text_delta',
      'text_end',
      'tool_use_start',
      'tool_use_delta',
      'tool_use_end',
      'finish',
    ]);
    expect(parts.at(-1)).toMatchObject({ finishReason: 'tool_use' });
  });

  it('keeps the Anthropic signature of a thinking block', () => {
    const parts = mapAll([
      { type: 'reasoning-start', id: '0' },
      { type: 'reasoning-delta', id: '0', text: 'hmm' },
      { type: 'reasoning-delta', id: '0', text: '', providerMetadata: { anthropic: { signature: 'sig' } } },
      { type: 'reasoning-end', id: '0' },
    ]);
    expect(parts.slice(0, 3)).toEqual([
      { type: 'thinking_start', index: 0 },
      { type: 'thinking_delta', index: 0, delta: 'hmm' },
      { type: 'thinking_end', index: 0, signature: 'sig' },
    ]);
    expect(parts.at(-1)).toMatchObject({
      message: { content: [{ type: 'thinking', text: 'hmm', signature: 'sig' }] },
    });
  });

  it('streams a tool call that arrived whole, and keeps the raw input of an invalid one', () => {
    const parts = mapAll([toolCall('a', 'ls', { dir: '/' }), toolCall('b', 'cat', '{"path":')]);
    expect(parts.slice(0, 6)).toEqual([
      { type: 'tool_use_start', index: 0, id: 'a', name: 'ls' },
      { type: 'tool_use_delta', index: 0, id: 'a', delta: '{"dir":"/"}' },
      {
        type: 'tool_use_end',
        index: 0,
        block: { type: 'tool_use', id: 'a', name: 'ls', input: { dir: '/' } },
      },
      { type: 'tool_use_start', index: 1, id: 'b', name: 'cat' },
      { type: 'tool_use_delta', index: 1, id: 'b', delta: '{"path":' },
      {
        type: 'tool_use_end',
        index: 1,
        block: { type: 'tool_use', id: 'b', name: 'cat', input: '{"path":' },
      },
    ]);
  });

  it('ignores provider-executed tools and parts Canopy does not stream', () => {
    const parts = mapAll([
      { type: 'tool-input-start', id: 'ws', toolName: 'web_search', providerExecuted: true },
      { ...toolCall('ws', 'web_search', {}), providerExecuted: true } as SdkPart,
      { type: 'source', sourceType: 'url', id: 's', url: 'https://x.test' },
      { type: 'text-end', id: 'never-started' },
    ]);
    expect(parts).toHaveLength(1);
    expect(parts[0]).toMatchObject({ type: 'finish', message: { content: [] } });
  });

  it('ends a block the provider left open before finishing', () => {
    const parts = mapAll([
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', text: 'cut' },
    ]);
    expect(parts.map((p) => p.type)).toEqual(['text_start', 'text_delta', 'text_end', 'finish']);
  });
});
