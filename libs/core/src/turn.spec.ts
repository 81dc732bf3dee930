import {
  assistantMessage,
  toolResultMessage,
  userMessage,
  type AssistantBlock,
  type AttachmentBlock,
  type Message,
  type ThinkingBlock,
  type ToolResultBlock,
  type ToolUseBlock,
} from './message';
import { Tree } from './tree';
import {
  allTurns,
  getTurn,
  newTurn,
  pushContent,
  pushDelta,
  putToolResult,
  replaceContent,
  TurnProjectionError,
  Turns,
  turnText,
  type Turn,
} from './turn';
import { addUsage, emptyUsage, makeUsage } from './usage';

const thinking: ThinkingBlock = { type: 'thinking', text: 'let me look', signature: 'sig' };
const toolUse = (id: string, name = 'read'): ToolUseBlock => ({ type: 'tool_use', id, name, input: { id } });
const toolResult = (toolUseId: string, content = `result of ${toolUseId}`): ToolResultBlock => ({
  type: 'tool_result',
  toolUseId,
  content,
  isError: false,
});

const usageA = makeUsage({ inputTokens: 100, outputTokens: 20, inputCost: 0.01 });
const usageB = makeUsage({ inputTokens: 150, outputTokens: 30, cacheReadTokens: 80 });
const usageC = makeUsage({ inputTokens: 10, outputTokens: 1 });

/**
 * 1 user "hi"
 * 2 assistant [thinking, text, tool_use t1]   usageA
 * 3 user [tool_result t1]
 * 4 assistant [text "done"]                   usageB
 * 5 user "next"
 * 6 assistant "ok"                            usageC
 */
function linear(): Tree {
  return new Tree()
    .push(userMessage('hi', 1_000))
    .push(assistantMessage([thinking, { type: 'text', text: 'looking' }, toolUse('t1')], 2_000), usageA)
    .push(toolResultMessage([toolResult('t1')], 3_000))
    .push(assistantMessage('done', 4_000), usageB)
    .push(userMessage('next', 5_000))
    .push(assistantMessage('ok', 6_000), usageC);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function turnWith(content: AssistantBlock[]): Turn {
  return { ...newTurn(1, [userMessage('q', 0)]), content };
}

describe('allTurns', () => {
  it('gives no turns for an empty tree or an empty path', () => {
    expect(allTurns(new Tree())).toEqual([]);
    expect(allTurns(linear().navigate(null))).toEqual([]);
  });

  it('cuts a linear path at user prompts, folding tool-result messages into the turn before', () => {
    const turns = allTurns(linear());
    expect(turns).toHaveLength(2);
    expect(turns[0]).toEqual<Turn>({
      id: 1,
      resId: 2,
      status: 'complete',
      userText: [{ type: 'text', text: 'hi' }],
      userAttachments: [],
      userTimestamp: 1_000,
      content: [thinking, { type: 'text', text: 'looking' }, toolUse('t1'), { type: 'text', text: 'done' }],
      timestamp: 4_000,
      toolResults: { t1: toolResult('t1') },
      error: null,
      usage: addUsage(usageA, usageB),
      edits: [1],
      regens: [2],
    });
    expect(turns[1]).toEqual<Turn>({
      id: 5,
      resId: 6,
      status: 'complete',
      userText: [{ type: 'text', text: 'next' }],
      userAttachments: [],
      userTimestamp: 5_000,
      content: [{ type: 'text', text: 'ok' }],
      timestamp: 6_000,
      toolResults: {},
      error: null,
      usage: usageC,
      edits: [5],
      regens: [6],
    });
  });

  it('never starts a turn at a tool-result message, and keeps every result of parallel tool uses', () => {
    const tree = new Tree()
      .push(userMessage('go', 1))
      .push(assistantMessage([toolUse('a'), toolUse('b')], 2))
      .push(toolResultMessage([toolResult('a'), toolResult('b')], 3))
      .push(assistantMessage([toolUse('c')], 4))
      .push(toolResultMessage([toolResult('c')], 5))
      .push(assistantMessage('all done', 6));
    const turns = allTurns(tree);
    expect(turns.map((t) => t.id)).toEqual([1]);
    expect(Object.keys(turns[0]!.toolResults).sort()).toEqual(['a', 'b', 'c']);
    expect(turns[0]!.toolResults['b']).toEqual(toolResult('b'));
    expect(turns[0]!.content.map((b) => b.type)).toEqual(['tool_use', 'tool_use', 'tool_use', 'text']);
    expect(turns[0]!.timestamp).toBe(6);
    expect(turns[0]!.resId).toBe(2);
  });

  it('keeps user attachments apart from user text', () => {
    const image: AttachmentBlock = { type: 'attachment', mediaType: 'image/png', url: 'https://x/y.png' };
    const tree = new Tree().push(
      userMessage([{ type: 'text', text: 'what is this' }, image, { type: 'text', text: 'thanks' }], 7),
    );
    const [turn] = allTurns(tree);
    expect(turn!.userText).toEqual([
      { type: 'text', text: 'what is this' },
      { type: 'text', text: 'thanks' },
    ]);
    expect(turn!.userAttachments).toEqual([image]);
    expect(turn!.userTimestamp).toBe(7);
  });

  it('gives a turn without a reply yet a null resId and timestamp and zero usage', () => {
    const tree = linear().push(userMessage('third', 7_000));
    const turns = allTurns(tree);
    expect(turns).toHaveLength(3);
    expect(turns[2]).toMatchObject({
      id: 7,
      resId: null,
      timestamp: null,
      content: [],
      toolResults: {},
      usage: emptyUsage(),
      edits: [7],
      regens: [],
    });
  });

  it('lists regens (children of the user node, resId included) and edits (siblings of the user node)', () => {
    // 1 user -> 2 assistant; regenerate: 1 -> 3 assistant
    const tree = new Tree().push(userMessage('q1', 1)).push(assistantMessage('first answer', 2), usageA);
    tree.navigate(1).push(assistantMessage('second answer', 3), usageB);
    // 3 -> 4 user -> 5 assistant; edit the prompt: 3 -> 6 user -> 7 assistant
    tree.push(userMessage('q2', 4)).push(assistantMessage('a', 5));
    tree.navigate(3).push(userMessage('q2 edited', 6)).push(assistantMessage('b', 7));

    const turns = allTurns(tree);
    expect(turns.map((t) => [t.id, t.resId])).toEqual([
      [1, 3],
      [6, 7],
    ]);
    expect(turns[0]).toMatchObject({ edits: [1], regens: [2, 3], usage: usageB });
    expect(turnText(turns[0]!, 'assistant')).toBe('second answer');
    expect(turns[1]).toMatchObject({ edits: [4, 6], regens: [7] });

    tree.navigate(2);
    const other = allTurns(tree);
    expect(other).toHaveLength(1);
    expect(other[0]).toMatchObject({ id: 1, resId: 2, regens: [2, 3], usage: usageA });
  });

  it('gives a root user message all roots as edits', () => {
    const tree = new Tree().push(userMessage('v1', 1)).push(assistantMessage('r1', 2));
    tree.navigate(null).push(userMessage('v2', 3)).push(assistantMessage('r2', 4));
    tree.navigate(null).push(userMessage('v3', 5));
    tree.navigate(3).extend();
    const turns = allTurns(tree);
    expect(turns.map((t) => t.id)).toEqual([3]);
    expect(turns[0]).toMatchObject({ edits: [1, 3, 5], regens: [4], resId: 4 });
  });

  it('sums usage over the turn nodes after the user message, not over abandoned branches', () => {
    const tree = new Tree().push(userMessage('q', 1), usageC).push(assistantMessage('a', 2), usageA);
    tree.navigate(1).push(assistantMessage('b', 3), usageB);
    expect(allTurns(tree)[0]!.usage).toEqual(usageB);
    expect(tree.usage()).toEqual(addUsage(addUsage(usageA, usageB), usageC));
  });

  it('throws TurnProjectionError when the path starts with an assistant message', () => {
    const tree = Tree.hydrate({
      nodes: [
        { id: 1, parentId: null, message: assistantMessage('hello', 1), usage: null },
        { id: 2, parentId: 1, message: userMessage('hi', 2), usage: null },
      ],
      path: [1, 2],
    });
    expect(() => allTurns(tree)).toThrow(TurnProjectionError);
    expect(() => allTurns(tree)).toThrow(
      'the active path starts with an assistant message (node 1); a turn must start with a user prompt',
    );
    try {
      allTurns(tree);
    } catch (err) {
      expect(err).toMatchObject({ name: 'TurnProjectionError', code: 'invalid_turn_path' });
    }
  });

  it('throws TurnProjectionError when the path starts with a tool-result message', () => {
    const tree = Tree.hydrate({
      nodes: [{ id: 4, parentId: null, message: toolResultMessage([toolResult('x')], 1), usage: null }],
      path: [4],
    });
    expect(() => allTurns(tree)).toThrow(TurnProjectionError);
    expect(() => allTurns(tree)).toThrow('starts with a tool-result message (node 4)');
  });
});

describe('getTurn', () => {
  it('returns the turn that starts at a user prompt on the path, equal to the one allTurns gives', () => {
    const tree = linear();
    const turns = allTurns(tree);
    expect(getTurn(tree, 1)).toEqual(turns[0]);
    expect(getTurn(tree, 5)).toEqual(turns[1]);
  });

  it('returns undefined for nodes that do not start a turn', () => {
    const tree = linear();
    expect(getTurn(tree, 2)).toBeUndefined(); // assistant
    expect(getTurn(tree, 3)).toBeUndefined(); // tool-result message
    expect(getTurn(tree, 6)).toBeUndefined();
  });

  it('returns undefined for ids off the active path or unknown', () => {
    const tree = linear();
    tree.navigate(4).push(userMessage('branch', 8));
    expect(tree.path).toEqual([1, 2, 3, 4, 7]);
    expect(getTurn(tree, 5)).toBeUndefined();
    expect(getTurn(tree, 7)?.id).toBe(7);
    expect(getTurn(tree, 99)).toBeUndefined();
    expect(getTurn(tree.navigate(null), 1)).toBeUndefined();
  });

  it('is available as Turns.get', () => {
    expect(Turns.get(linear(), 5)?.resId).toBe(6);
  });
});

describe('newTurn', () => {
  it('builds a turn from unsaved messages with a null id', () => {
    const turn = newTurn(null, [
      userMessage('hi', 10),
      assistantMessage([thinking, toolUse('t1')], 20),
      toolResultMessage([toolResult('t1')], 30),
      assistantMessage('partial', 40),
    ]);
    expect(turn).toEqual<Turn>({
      id: null,
      resId: null,
      status: 'complete',
      userText: [{ type: 'text', text: 'hi' }],
      userAttachments: [],
      userTimestamp: 10,
      content: [thinking, toolUse('t1'), { type: 'text', text: 'partial' }],
      timestamp: 40,
      toolResults: { t1: toolResult('t1') },
      error: null,
      usage: emptyUsage(),
      edits: [],
      regens: [],
    });
  });

  it('keeps the usage it is given', () => {
    expect(newTurn(3, [userMessage('q', 0)], usageA).usage).toEqual(usageA);
  });

  it('rejects an empty message list', () => {
    expect(() => newTurn(null, [])).toThrow(TurnProjectionError);
    expect(() => newTurn(null, [])).toThrow('a turn needs at least a user message');
  });

  it('rejects an assistant first message', () => {
    expect(() => newTurn(null, [assistantMessage('hi', 0)])).toThrow(TurnProjectionError);
    expect(() => newTurn(null, [assistantMessage('hi', 0)])).toThrow(
      'a turn must start with a user message, not an assistant message',
    );
  });

  it('does not modify the messages it folds', () => {
    const messages: Message[] = deepFreeze([userMessage('q', 0), assistantMessage('a', 1)]);
    const turn = newTurn(1, messages);
    turn.content.push({ type: 'text', text: 'more' });
    expect(messages[1]!.content).toEqual([{ type: 'text', text: 'a' }]);
  });
});

describe('turnText', () => {
  it('joins the user text blocks with blank lines', () => {
    const turn = newTurn(1, [
      userMessage([
        { type: 'text', text: 'one' },
        { type: 'attachment', mediaType: 'image/png', data: 'AAAA' },
        { type: 'text', text: 'two' },
      ]),
    ]);
    expect(turnText(turn, 'user')).toBe('one\n\ntwo');
  });

  it('joins the assistant text blocks with blank lines, ignoring thinking and tool use', () => {
    const turn = turnWith([
      thinking,
      { type: 'text', text: 'first' },
      toolUse('t1'),
      { type: 'text', text: 'second' },
    ]);
    expect(turnText(turn, 'assistant')).toBe('first\n\nsecond');
  });

  it('is empty when there is no text', () => {
    expect(turnText(turnWith([thinking, toolUse('t')]), 'assistant')).toBe('');
    expect(turnText(turnWith([]), 'assistant')).toBe('');
  });
});

describe('streaming reducers', () => {
  it('pushContent appends a block without touching its input', () => {
    const before = deepFreeze(turnWith([{ type: 'text', text: 'a' }]));
    const after = pushContent(before, thinking);
    expect(after).not.toBe(before);
    expect(after.content).toEqual([{ type: 'text', text: 'a' }, thinking]);
    expect(before.content).toEqual([{ type: 'text', text: 'a' }]);
    expect({ ...after, content: before.content }).toEqual(before);
  });

  it('pushDelta appends to a trailing text block', () => {
    const before = deepFreeze(turnWith([thinking, { type: 'text', text: 'Hel' }]));
    const after = pushDelta(pushDelta(before, 'lo'), ', world');
    expect(after.content).toEqual([thinking, { type: 'text', text: 'Hello, world' }]);
    expect(before.content).toEqual([thinking, { type: 'text', text: 'Hel' }]);
  });

  it('pushDelta appends to a trailing thinking block, keeping its type and signature', () => {
    const before = deepFreeze(turnWith([thinking]));
    const after = pushDelta(before, ' closer');
    expect(after.content).toEqual([{ type: 'thinking', text: 'let me look closer', signature: 'sig' }]);
    expect(before.content).toEqual([thinking]);
  });

  it('pushDelta starts a text block when the last block has no text or there is none', () => {
    const afterTool = pushDelta(deepFreeze(turnWith([toolUse('t1')])), 'next');
    expect(afterTool.content).toEqual([toolUse('t1'), { type: 'text', text: 'next' }]);
    const fromEmpty = pushDelta(deepFreeze(turnWith([])), 'joined mid-stream');
    expect(fromEmpty.content).toEqual([{ type: 'text', text: 'joined mid-stream' }]);
  });

  it('putToolResult stores results by tool-use id without touching its input', () => {
    const before = deepFreeze(putToolResult(turnWith([]), toolResult('a')));
    const after = putToolResult(before, toolResult('b'));
    expect(after.toolResults).toEqual({ a: toolResult('a'), b: toolResult('b') });
    expect(before.toolResults).toEqual({ a: toolResult('a') });
    const replaced = putToolResult(after, toolResult('a', 'second try'));
    expect(replaced.toolResults).toEqual({ a: toolResult('a', 'second try'), b: toolResult('b') });
    expect(after.toolResults['a']).toEqual(toolResult('a'));
  });

  it('replaceContent replaces a tool use by id, leaving parallel tool uses alone', () => {
    const stubA = toolUse('a', 'read');
    const stubB = toolUse('b', 'write');
    const before = deepFreeze(turnWith([{ type: 'text', text: 'x' }, stubA, stubB]));
    const finalA: ToolUseBlock = { type: 'tool_use', id: 'a', name: 'read', input: { path: '/etc/hosts' } };
    const after = replaceContent(before, finalA);
    expect(after.content).toEqual([{ type: 'text', text: 'x' }, finalA, stubB]);
    expect(before.content).toEqual([{ type: 'text', text: 'x' }, stubA, stubB]);
    const finalB: ToolUseBlock = { type: 'tool_use', id: 'b', name: 'write', input: { path: '/tmp/x' } };
    expect(replaceContent(after, finalB).content).toEqual([{ type: 'text', text: 'x' }, finalA, finalB]);
  });

  it('replaceContent appends a tool use with an unknown id', () => {
    const before = deepFreeze(turnWith([toolUse('a')]));
    expect(replaceContent(before, toolUse('z')).content).toEqual([toolUse('a'), toolUse('z')]);
    expect(before.content).toEqual([toolUse('a')]);
  });

  it('replaceContent replaces the last block for blocks without an id', () => {
    const before = deepFreeze(turnWith([toolUse('a'), { type: 'text', text: 'draf' }]));
    const after = replaceContent(before, { type: 'text', text: 'draft, final' });
    expect(after.content).toEqual([toolUse('a'), { type: 'text', text: 'draft, final' }]);
    expect(replaceContent(after, thinking).content).toEqual([toolUse('a'), thinking]);
    expect(before.content).toEqual([toolUse('a'), { type: 'text', text: 'draf' }]);
    expect(replaceContent(deepFreeze(turnWith([])), thinking).content).toEqual([thinking]);
  });

  it('a streamed turn equals the turn built from the saved messages', () => {
    const messages = [
      userMessage('hi', 1),
      assistantMessage([{ type: 'text', text: 'Checking.' }, toolUse('t1')], 2),
      toolResultMessage([toolResult('t1')], 3),
      assistantMessage('Done.', 4),
    ];
    let live = newTurn(null, messages.slice(0, 1));
    live = pushContent(live, { type: 'text', text: 'Check' });
    live = pushDelta(live, 'ing.');
    live = pushContent(live, { type: 'tool_use', id: 't1', name: 'read', input: {} });
    live = replaceContent(live, toolUse('t1'));
    live = putToolResult(live, toolResult('t1'));
    live = pushDelta(live, 'Do');
    live = pushDelta(live, 'ne.');
    const saved = newTurn(null, messages);
    expect(live.content).toEqual(saved.content);
    expect(live.toolResults).toEqual(saved.toolResults);
  });
});

describe('Turns', () => {
  it('exposes the turn functions under their short names (Turns.new, Turns.all, …)', () => {
    expect(Turns.all).toBe(allTurns);
    expect(Turns.get).toBe(getTurn);
    expect(Turns.new).toBe(newTurn);
    expect(Turns.text).toBe(turnText);
    expect(Turns.pushContent).toBe(pushContent);
    expect(Turns.pushDelta).toBe(pushDelta);
    expect(Turns.putToolResult).toBe(putToolResult);
    expect(Turns.replaceContent).toBe(replaceContent);
    expect(Object.keys(Turns).sort()).toEqual(
      ['all', 'get', 'new', 'pushContent', 'pushDelta', 'putToolResult', 'replaceContent', 'text'].sort(),
    );
  });
});
