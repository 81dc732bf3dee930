import {
  assistantMessage,
  isAttachmentBlock,
  isTextBlock,
  isToolResultBlock,
  isToolResultMessage,
  isToolUseBlock,
  isTurnBoundary,
  joinText,
  messageText,
  toBlocks,
  toolResultMessage,
  toolResultText,
  toolUses,
  userMessage,
  type AttachmentBlock,
  type Block,
  type ToolResultBlock,
  type ToolUseBlock,
} from './message';

const image: AttachmentBlock = { type: 'attachment', mediaType: 'image/png', data: 'AAAA', name: 'x.png' };
const use: ToolUseBlock = { type: 'tool_use', id: 't1', name: 'read', input: { path: '/a' } };
const result: ToolResultBlock = {
  type: 'tool_result',
  toolUseId: 't1',
  content: 'file body',
  isError: false,
};

describe('toBlocks', () => {
  it('turns a string into one text block', () => {
    expect(toBlocks('hello')).toEqual([{ type: 'text', text: 'hello' }]);
    expect(toBlocks('')).toEqual([{ type: 'text', text: '' }]);
  });

  it('passes blocks through unchanged', () => {
    const blocks: Block[] = [{ type: 'text', text: 'a' }, image];
    expect(toBlocks(blocks)).toBe(blocks);
  });
});

describe('message constructors', () => {
  it('build user, assistant and tool-result messages', () => {
    expect(userMessage('hi', 5)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'hi' }],
      timestamp: 5,
    });
    expect(assistantMessage([use], 6)).toEqual({ role: 'assistant', content: [use], timestamp: 6 });
    expect(toolResultMessage([result], 7)).toEqual({ role: 'user', content: [result], timestamp: 7 });
  });

  it('default the timestamp to now', () => {
    const before = Date.now();
    const m = userMessage('hi');
    expect(m.timestamp).toBeGreaterThanOrEqual(before);
    expect(m.timestamp).toBeLessThanOrEqual(Date.now());
  });
});

describe('isTurnBoundary and isToolResultMessage', () => {
  it('a plain user message opens a turn', () => {
    const m = userMessage([{ type: 'text', text: 'q' }, image], 1);
    expect(isTurnBoundary(m)).toBe(true);
    expect(isToolResultMessage(m)).toBe(false);
  });

  it('a user message carrying a tool result continues the turn, even with text beside it', () => {
    for (const m of [
      toolResultMessage([result], 1),
      userMessage([{ type: 'text', text: 'also' }, result], 1),
    ]) {
      expect(isTurnBoundary(m)).toBe(false);
      expect(isToolResultMessage(m)).toBe(true);
    }
  });

  it('an assistant message is neither', () => {
    const m = assistantMessage([{ type: 'text', text: 'a' }, use], 1);
    expect(isTurnBoundary(m)).toBe(false);
    expect(isToolResultMessage(m)).toBe(false);
  });
});

describe('messageText and joinText', () => {
  it('join text blocks with blank lines, ignoring other blocks', () => {
    const m = assistantMessage(
      [
        { type: 'thinking', text: 'hidden' },
        { type: 'text', text: 'one' },
        use,
        { type: 'text', text: 'two' },
      ],
      1,
    );
    expect(messageText(m)).toBe('one\n\ntwo');
    expect(joinText(m.content)).toBe('one\n\ntwo');
    expect(messageText(userMessage([image, result], 1))).toBe('');
    expect(messageText({ content: [] })).toBe('');
  });
});

describe('toolResultText', () => {
  it('returns string content as is', () => {
    expect(toolResultText(result)).toBe('file body');
  });

  it('joins the text blocks of block content, ignoring attachments', () => {
    expect(
      toolResultText({
        type: 'tool_result',
        toolUseId: 't',
        content: [{ type: 'text', text: 'a' }, image, { type: 'text', text: 'b' }],
        isError: true,
      }),
    ).toBe('a\n\nb');
  });
});

describe('block guards and toolUses', () => {
  it('narrow each block type', () => {
    const blocks: Block[] = [
      { type: 'text', text: 't' },
      { type: 'thinking', text: 'th' },
      use,
      result,
      image,
    ];
    expect(blocks.map(isTextBlock)).toEqual([true, false, false, false, false]);
    expect(blocks.map(isToolUseBlock)).toEqual([false, false, true, false, false]);
    expect(blocks.map(isToolResultBlock)).toEqual([false, false, false, true, false]);
    expect(blocks.map(isAttachmentBlock)).toEqual([false, false, false, false, true]);
  });

  it('toolUses lists the tool-use blocks of a message in order', () => {
    const other: ToolUseBlock = { type: 'tool_use', id: 't2', name: 'ls', input: {} };
    expect(toolUses(assistantMessage([use, { type: 'text', text: 'x' }, other], 1))).toEqual([use, other]);
    expect(toolUses(userMessage('q', 1))).toEqual([]);
  });
});
