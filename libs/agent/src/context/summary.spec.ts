import { assistantMessage, toolResultMessage, userMessage, type Message } from '@canopy/core';
import {
  summaryCut,
  summaryLength,
  summaryOnPath,
  summaryRequest,
  systemWithSummary,
  transcript,
} from './summary';

const turns = (n: number): Message[] =>
  Array.from({ length: n }, (_, i) => [userMessage(`q${i + 1}`), assistantMessage(`a${i + 1}`)]).flat();

describe('summaryOnPath', () => {
  it('takes the summary of the node nearest the end of the path', () => {
    const summaries = [
      { throughNodeId: 2, text: 'old', tokens: 1 },
      { throughNodeId: 6, text: 'new', tokens: 1 },
      { throughNodeId: 9, text: 'another branch', tokens: 1 },
    ];
    expect(summaryOnPath([1, 2, 3, 4, 5, 6, 7, 8], summaries)).toEqual({ summary: summaries[1], index: 5 });
    expect(summaryOnPath([1, 2, 3], summaries)).toEqual({ summary: summaries[0], index: 1 });
    expect(summaryOnPath([1, 10, 11], summaries)).toBeNull();
  });
});

describe('summaryCut', () => {
  const base = { fixedTokens: 0, budget: 100, summarizerBudget: null };

  it('cuts at the earliest turn start that leaves the rest within half the budget', () => {
    // 5 turns of 20 tokens (10 a message): leaving 2 turns (40) is within 50.
    const messages = turns(5);
    expect(summaryCut({ ...base, messages, tokens: messages.map(() => 10), committed: 10 })).toBe(6);
  });

  it('never cuts into the last turn nor past the committed messages', () => {
    const messages = turns(5);
    const tokens = messages.map(() => 10);
    // Only the first 4 messages are committed: the cut can be at 2 or 4 at most.
    expect(summaryCut({ ...base, messages, tokens, committed: 4 })).toBe(4);
    // One turn: nothing to summarize.
    expect(summaryCut({ ...base, messages: turns(1), tokens: [10, 10], committed: 2 })).toBeNull();
  });

  it('summarizes no more than the summarizing call can read, and keeps tool rounds whole', () => {
    const use: Message = {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 't', name: 'x', input: {} }],
      timestamp: 0,
    };
    const messages = [
      userMessage('q1'),
      use,
      toolResultMessage([{ type: 'tool_result', toolUseId: 't', content: 'r', isError: false }]),
      assistantMessage('a1'),
      ...turns(3),
    ];
    const tokens = messages.map(() => 10);
    // Turn starts: 0, 4, 6, 8 — a cut never falls inside the tool round.
    expect(summaryCut({ ...base, messages, tokens, committed: 10, summarizerBudget: 45 })).toBe(4);
    expect(summaryCut({ ...base, messages, tokens, committed: 10, summarizerBudget: 30 })).toBeNull();
  });
});

describe('the summarizing request', () => {
  it('carries the prompt, the earlier summary and the transcript, tools included', () => {
    const use: Message = {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 't', name: 'clock', input: { tz: 'UTC' } }],
      timestamp: 0,
    };
    const messages = [
      userMessage('what time is it'),
      use,
      toolResultMessage([{ type: 'tool_result', toolUseId: 't', content: 'noon', isError: false }]),
      assistantMessage('It is noon.'),
    ];
    expect(transcript(messages)).toBe(
      'User: what time is it\nAssistant called clock({"tz":"UTC"})\nTool result: noon\nAssistant: It is noon.',
    );
    const request = summaryRequest('Summarize.', { throughNodeId: 2, text: 'before', tokens: 1 }, messages);
    expect(request.role).toBe('user');
    expect((request.content[0] as { text: string }).text).toBe(
      `Summarize.\n\nEarlier summary:\nbefore\n\nConversation:\n${transcript(messages)}`,
    );
  });

  it('puts the summary in the system prompt, after the session’s own', () => {
    const summary = { throughNodeId: 4, text: 'They met.', tokens: 3 };
    expect(systemWithSummary('Be brief.', summary)).toBe(
      'Be brief.\n\nSummary of the earlier conversation (its older turns are not repeated below):\nThey met.',
    );
    expect(systemWithSummary(null, null)).toBeNull();
    expect(systemWithSummary('Be brief.', null)).toBe('Be brief.');
  });

  it('asks for a summary of at most 1,024 tokens, or a quarter of a smaller window', () => {
    expect(summaryLength(null)).toBe(1_024);
    expect(summaryLength(200_000)).toBe(1_024);
    expect(summaryLength(2_000)).toBe(500);
  });
});
