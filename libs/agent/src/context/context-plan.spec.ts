import {
  assistantMessage,
  toolResultMessage,
  userMessage,
  type ContextPolicy,
  type Message,
} from '@canopy/core';
import { planContext, reserveFor, turnStarts } from './context-plan';

const toolUse = (id: string): Message => ({
  role: 'assistant',
  content: [{ type: 'tool_use', id, name: 'clock', input: {} }],
  timestamp: 0,
});
const result = (id: string) =>
  toolResultMessage([{ type: 'tool_result', toolUseId: id, content: 'noon', isError: false }]);

/** Turns of a user prompt and a reply; the second turn has a tool round. 8 messages, 10 tokens each. */
const conversation: Message[] = [
  userMessage('one'),
  assistantMessage('a1'),
  userMessage('two'),
  toolUse('t1'),
  result('t1'),
  assistantMessage('a2'),
  userMessage('three'),
  assistantMessage('a3'),
];
const tokens = conversation.map(() => 10);

const plan = (
  policy: ContextPolicy,
  window: number | null,
  fixedTokens = 0,
  extra: Partial<{ max: number }> = {},
) =>
  planContext({
    messages: conversation,
    tokens,
    fixedTokens,
    window,
    maxOutputTokens: extra.max ?? null,
    policy,
  });

describe('turnStarts', () => {
  it('starts a turn at each user prompt, not at a tool result', () => {
    expect(turnStarts(conversation)).toEqual([0, 2, 6]);
  });

  it('counts messages before the first prompt as a turn of their own', () => {
    expect(turnStarts([assistantMessage('hello'), userMessage('hi'), assistantMessage('yes')])).toEqual([
      0, 1,
    ]);
  });
});

describe('reserveFor', () => {
  it('takes the policy’s reserve, else the output limit capped at 4,096 and a quarter of the window', () => {
    expect(reserveFor({ strategy: 'none', reserveOutputTokens: 7 }, 100_000, 64_000)).toBe(7);
    expect(reserveFor({ strategy: 'none' }, 200_000, 64_000)).toBe(4_096);
    expect(reserveFor({ strategy: 'none' }, 200_000, 1_000)).toBe(1_000);
    expect(reserveFor({ strategy: 'none' }, 4_000, null)).toBe(1_000);
  });
});

describe('planContext', () => {
  it('sends everything when the window is unknown', () => {
    expect(plan({ strategy: 'truncate' }, null, 5)).toEqual({
      sent: [0, 1, 2, 3, 4, 5, 6, 7],
      tokens: 85,
      window: null,
      budget: null,
      dropped: 0,
      fits: true,
    });
  });

  it('sends everything that fits, whatever the strategy', () => {
    const fitting = plan({ strategy: 'truncate', reserveOutputTokens: 10 }, 100, 10);
    expect(fitting).toMatchObject({ sent: [0, 1, 2, 3, 4, 5, 6, 7], tokens: 90, budget: 90, fits: true });
  });

  it('with none, sends everything and says it does not fit', () => {
    expect(plan({ strategy: 'none', reserveOutputTokens: 10 }, 80)).toMatchObject({
      sent: [0, 1, 2, 3, 4, 5, 6, 7],
      tokens: 80,
      budget: 70,
      dropped: 0,
      fits: false,
    });
  });

  it('with truncate, leaves out the oldest whole turns until it fits', () => {
    // 80 tokens, budget 70: the first turn (2 messages) goes.
    expect(plan({ strategy: 'truncate', reserveOutputTokens: 10 }, 80)).toMatchObject({
      sent: [2, 3, 4, 5, 6, 7],
      tokens: 60,
      dropped: 2,
      fits: true,
    });
    // Budget 30: the tool round goes with its turn, never a tool use without its result.
    expect(plan({ strategy: 'truncate', reserveOutputTokens: 10 }, 40)).toMatchObject({
      sent: [6, 7],
      tokens: 20,
      dropped: 6,
      fits: true,
    });
  });

  it('never leaves out the last turn or the fixed part: too small a window does not fit', () => {
    expect(plan({ strategy: 'truncate', reserveOutputTokens: 0 }, 25, 10)).toMatchObject({
      sent: [6, 7],
      tokens: 30,
      budget: 25,
      fits: false,
    });
  });

  it('keeps the first turns the policy names', () => {
    expect(plan({ strategy: 'truncate', reserveOutputTokens: 0, keepFirstTurns: 1 }, 50)).toMatchObject({
      sent: [0, 1, 6, 7],
      tokens: 40,
      dropped: 4,
      fits: true,
    });
  });
});
