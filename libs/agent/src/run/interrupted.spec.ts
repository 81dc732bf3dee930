import { assistantMessage, emptyUsage, toolResultMessage, userMessage, type Message } from '@canopy/core';
import { INTERRUPTED_TOOL_RESULT, keptOnInterrupt, keptOnInterruptWhilePaused } from './interrupted';
import type { PendingState } from './run-state';

const prompt = userMessage('do it', 1);
const toolUse: Message = {
  role: 'assistant',
  content: [
    { type: 'text', text: 'adding' },
    { type: 'tool_use', id: 't1', name: 'calculator', input: { expression: '1+1' } },
    { type: 'tool_use', id: 't2', name: 'clock', input: {} },
  ],
  timestamp: 2,
};
const results = toolResultMessage(
  [
    { type: 'tool_result', toolUseId: 't1', content: '2', isError: false },
    { type: 'tool_result', toolUseId: 't2', content: 'noon', isError: false },
  ],
  3,
);

describe('keptOnInterrupt', () => {
  it('keeps the completed steps and the text being streamed, the last one marked', () => {
    const streaming: Message = {
      role: 'assistant',
      content: [
        { type: 'thinking', text: 'half a tho' },
        { type: 'text', text: 'The answer' },
        { type: 'tool_use', id: 't3', name: 'clock', input: {} },
      ],
      timestamp: 4,
    };
    expect(keptOnInterrupt([prompt, toolUse, results], streaming)).toEqual([
      prompt,
      toolUse,
      results,
      { role: 'assistant', content: [{ type: 'text', text: 'The answer' }], timestamp: 4, interrupted: true },
    ]);
  });

  it('closes a tool round in progress with an error result for each tool use', () => {
    const kept = keptOnInterrupt([prompt, toolUse], null);
    expect(kept.slice(0, 2)).toEqual([prompt, toolUse]);
    expect(kept[2]).toMatchObject({
      role: 'user',
      interrupted: true,
      content: [
        { type: 'tool_result', toolUseId: 't1', content: INTERRUPTED_TOOL_RESULT, isError: true },
        { type: 'tool_result', toolUseId: 't2', content: INTERRUPTED_TOOL_RESULT, isError: true },
      ],
    });
  });

  it('keeps nothing of a streamed message without text, and marks the prompt when it is all there is', () => {
    const empty: Message = { role: 'assistant', content: [{ type: 'text', text: ' ' }], timestamp: 5 };
    expect(keptOnInterrupt([prompt], empty)).toEqual([{ ...prompt, interrupted: true }]);
    expect(keptOnInterrupt([], empty)).toEqual([]);
    expect(keptOnInterrupt([], null)).toEqual([]);
  });

  it('keeps a finished reply as it is, marked', () => {
    const reply = assistantMessage('done', 6);
    expect(keptOnInterrupt([prompt, reply], null)).toEqual([prompt, { ...reply, interrupted: true }]);
  });
});

describe('keptOnInterruptWhilePaused', () => {
  it('closes the paused round with the results it has, the decisions taken and errors for the rest', () => {
    const pending: PendingState = {
      version: 1,
      messages: [prompt, toolUse],
      calls: [
        {
          block: toolUse.content[1] as never,
          kind: 'server',
          needsDecision: true,
          decision: { type: 'reject', reason: 'no' },
          result: null,
        },
        {
          block: toolUse.content[2] as never,
          kind: 'client',
          needsDecision: true,
          decision: null,
          result: null,
        },
      ],
      reason: 'client_tool',
      step: 1,
      maxSteps: 4,
      segmentUsage: emptyUsage(),
      runUsage: emptyUsage(),
    };
    const kept = keptOnInterruptWhilePaused(pending);
    expect(kept.slice(0, 2)).toEqual([prompt, toolUse]);
    expect(kept[2]).toMatchObject({
      role: 'user',
      interrupted: true,
      content: [
        { type: 'tool_result', toolUseId: 't1', content: 'Tool rejected: no', isError: true },
        { type: 'tool_result', toolUseId: 't2', content: INTERRUPTED_TOOL_RESULT, isError: true },
      ],
    });
  });
});
