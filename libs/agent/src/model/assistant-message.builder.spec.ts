import { AssistantMessageBuilder, parseToolInput } from './assistant-message.builder';
import { makeUsage } from '@canopy/core';

describe('AssistantMessageBuilder', () => {
  it('numbers blocks in order and assembles the message from the deltas', () => {
    const b = new AssistantMessageBuilder();
    const thinking = b.startThinking();
    b.appendThinking(thinking.index, 'hm');
    expect(b.endThinking(thinking.index, 'sig')).toEqual({
      type: 'thinking_end',
      index: 0,
      signature: 'sig',
    });
    const text = b.startText();
    b.appendText(text.index, 'Hel');
    b.appendText(text.index, 'lo');
    b.endText(text.index);
    const tool = b.startToolUse('call_1', 'search');
    expect(tool).toEqual({ type: 'tool_use_start', index: 2, id: 'call_1', name: 'search' });
    expect(b.appendToolInput(tool.index, '{"q":')).toEqual({
      type: 'tool_use_delta',
      index: 2,
      id: 'call_1',
      delta: '{"q":',
    });
    b.appendToolInput(tool.index, '"x"}');
    expect(b.endToolUse(tool.index).block).toEqual({
      type: 'tool_use',
      id: 'call_1',
      name: 'search',
      input: { q: 'x' },
    });
    const finish = b.finish(makeUsage(), 'tool_use');
    expect(finish.message.content).toEqual([
      { type: 'thinking', text: 'hm', signature: 'sig' },
      { type: 'text', text: 'Hello' },
      { type: 'tool_use', id: 'call_1', name: 'search', input: { q: 'x' } },
    ]);
  });
});

describe('parseToolInput', () => {
  it('parses JSON, treats empty as no arguments and keeps broken JSON raw', () => {
    expect(parseToolInput('{"a":1}')).toEqual({ a: 1 });
    expect(parseToolInput('  ')).toEqual({});
    expect(parseToolInput('{"a":')).toBe('{"a":');
  });
});
