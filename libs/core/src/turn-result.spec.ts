import { z } from 'zod';

import { assistantMessage, toolResultMessage, userMessage } from './message';
import {
  TurnResult,
  TurnResultParseError,
  turnItems,
  type AnyTurnItem,
  type JsonResult,
  type RunMessage,
  type TurnResultData,
} from './turn-result';

/** A run: prompt, assistant text + tool use, the tool result, the final answer. */
const run: RunMessage[] = [
  { nodeId: 10, message: userMessage('Create a file', 1_000) },
  {
    nodeId: 11,
    message: assistantMessage(
      [
        { type: 'thinking', text: 'a file is needed' },
        { type: 'text', text: "I'll create it." },
        { type: 'tool_use', id: 'tu_1', name: 'write_file', input: { path: 'a.txt', content: 'hi' } },
      ],
      2_000,
    ),
  },
  {
    nodeId: 12,
    message: toolResultMessage(
      [{ type: 'tool_result', toolUseId: 'tu_1', content: 'wrote 2 bytes', isError: false }],
      3_000,
    ),
  },
  { nodeId: 13, message: assistantMessage('Created a.txt.', 4_000) },
];

const expectedItems: AnyTurnItem[] = [
  { type: 'message', role: 'user', id: 'msg_10', text: 'Create a file', timestamp: 1_000 },
  { type: 'message', role: 'assistant', id: 'msg_11', text: "I'll create it.", timestamp: 2_000 },
  {
    type: 'tool_call',
    id: 'call_tu_1',
    messageId: 'msg_11',
    toolId: 'tu_1',
    toolName: 'write_file',
    parameters: { path: 'a.txt', content: 'hi' },
    timestamp: 2_000,
  },
  {
    type: 'tool_result',
    id: 'result_tu_1',
    messageId: 'msg_12',
    toolId: 'tu_1',
    toolName: 'write_file',
    isError: false,
    value: 'wrote 2 bytes',
    timestamp: 3_000,
  },
  { type: 'message', role: 'assistant', id: 'msg_13', text: 'Created a.txt.', timestamp: 4_000 },
];

function resultWith(finalResponse: string): TurnResult {
  return new TurnResult({
    sessionId: 's',
    finalResponse,
    items: [],
    durationMs: 1,
    numTurns: 1,
    isError: false,
    runId: 'r',
    status: 'completed',
    awaiting: [],
  });
}

describe('turnItems', () => {
  it('lists messages, tool calls and tool results in order with stable ids', () => {
    expect(turnItems(run)).toEqual(expectedItems);
  });

  it('names messages by position before they are committed', () => {
    const items = turnItems([
      { message: userMessage('q', 1) },
      { nodeId: null, message: assistantMessage([{ type: 'tool_use', id: 'x', name: 'ls', input: {} }], 2) },
      { nodeId: 7, message: assistantMessage('a', 3) },
    ]);
    expect(items.map((i) => i.id)).toEqual(['msg_p0', 'msg_p1', 'call_x', 'msg_7']);
    expect(items[2]).toMatchObject({ type: 'tool_call', messageId: 'msg_p1' });
  });

  it('correlates parallel calls and results by toolId, the result taking its tool name from the call', () => {
    const items = turnItems([
      {
        nodeId: 1,
        message: assistantMessage(
          [
            { type: 'tool_use', id: 'a', name: 'read', input: { path: '/a' } },
            { type: 'tool_use', id: 'b', name: 'grep', input: { q: 'x' } },
          ],
          1,
        ),
      },
      {
        nodeId: 2,
        message: toolResultMessage(
          [
            { type: 'tool_result', toolUseId: 'b', content: 'no match', isError: true },
            {
              type: 'tool_result',
              toolUseId: 'a',
              content: [
                { type: 'text', text: 'l1' },
                { type: 'text', text: 'l2' },
              ],
              isError: false,
            },
          ],
          2,
        ),
      },
    ]);
    const result = new TurnResult({
      sessionId: 's',
      finalResponse: '',
      items,
      durationMs: 0,
      numTurns: 1,
      isError: false,
      runId: 'r',
      status: 'completed',
      awaiting: [],
    });
    expect(result.toolResults.map((r) => [r.id, r.toolId, r.toolName, r.isError, r.value])).toEqual([
      ['result_b', 'b', 'grep', true, 'no match'],
      ['result_a', 'a', 'read', false, 'l1\n\nl2'],
    ]);
    for (const call of result.toolCalls) {
      const match = result.toolResults.find((r) => r.toolId === call.toolId);
      expect(match?.toolName).toBe(call.toolName);
    }
  });

  it('gives a result without a known call an empty tool name', () => {
    const items = turnItems([
      {
        nodeId: 1,
        message: toolResultMessage(
          [{ type: 'tool_result', toolUseId: 'gone', content: 'x', isError: false }],
          1,
        ),
      },
    ]);
    expect(items).toEqual([
      {
        type: 'tool_result',
        id: 'result_gone',
        messageId: 'msg_1',
        toolId: 'gone',
        toolName: '',
        isError: false,
        value: 'x',
        timestamp: 1,
      },
    ]);
  });

  it('wraps tool input that is not an object', () => {
    const items = turnItems([
      {
        nodeId: 1,
        message: assistantMessage(
          [
            { type: 'tool_use', id: 's', name: 'echo', input: 'plain' },
            { type: 'tool_use', id: 'l', name: 'sum', input: [1, 2] },
            { type: 'tool_use', id: 'n', name: 'noop', input: null },
          ],
          1,
        ),
      },
    ]);
    const calls = items.filter((i) => i.type === 'tool_call');
    expect(calls.map((c) => c.type === 'tool_call' && c.parameters)).toEqual([
      { value: 'plain' },
      { value: [1, 2] },
      { value: null },
    ]);
  });

  it('keeps the text a tool-result message carries beside its results', () => {
    const items = turnItems([
      {
        nodeId: 5,
        message: userMessage(
          [
            { type: 'tool_result', toolUseId: 't', content: 'ok', isError: false },
            { type: 'text', text: 'also, stop after this' },
          ],
          1,
        ),
      },
    ]);
    expect(items.map((i) => [i.type, i.id])).toEqual([
      ['message', 'msg_5'],
      ['tool_result', 'result_t'],
    ]);
    expect(items[0]).toMatchObject({ role: 'user', text: 'also, stop after this' });
  });
});

const ok = { runId: 'run_1', status: 'completed' } as const;

describe('TurnResult.fromMessages', () => {
  it('takes the final response from the last assistant text and counts assistant messages', () => {
    const result = TurnResult.fromMessages({ ...ok, sessionId: 'ses_1', messages: run, durationMs: 1234 });
    expect(result.sessionId).toBe('ses_1');
    expect(result.finalResponse).toBe('Created a.txt.');
    expect(result.numTurns).toBe(2);
    expect(result.durationMs).toBe(1234);
    expect(result.isError).toBe(false);
    expect(result.items).toEqual(expectedItems);
  });

  it('exposes messages, assistant messages, tool calls and tool results', () => {
    const result = TurnResult.fromMessages({ ...ok, sessionId: 's', messages: run, durationMs: 0 });
    expect(result.messages.map((m) => m.id)).toEqual(['msg_10', 'msg_11', 'msg_13']);
    expect(result.assistantMessages.map((m) => m.id)).toEqual(['msg_11', 'msg_13']);
    expect(result.toolCalls).toEqual([expectedItems[2]]);
    expect(result.toolResults).toEqual([expectedItems[3]]);
  });

  it('skips assistant messages without text when choosing the final response', () => {
    const result = TurnResult.fromMessages({
      ...ok,
      sessionId: 's',
      messages: [
        { nodeId: 1, message: userMessage('q', 1) },
        { nodeId: 2, message: assistantMessage('first', 2) },
        { nodeId: 3, message: assistantMessage('second\n\npart', 3) },
        { nodeId: 4, message: assistantMessage([{ type: 'tool_use', id: 't', name: 'x', input: {} }], 4) },
      ],
      durationMs: 0,
    });
    expect(result.finalResponse).toBe('second\n\npart');
    expect(result.numTurns).toBe(3);
  });

  it('gives an empty final response and no turns without assistant messages', () => {
    const result = TurnResult.fromMessages({
      ...ok,
      sessionId: 's',
      messages: [{ message: userMessage('q', 1) }],
      durationMs: 5,
    });
    expect(result.finalResponse).toBe('');
    expect(result.numTurns).toBe(0);
    expect(result.isError).toBe(false);
  });

  it('reports a failed run as an error whose final response is the error', () => {
    const result = TurnResult.fromMessages({
      runId: 'r',
      status: 'error',
      sessionId: 's',
      messages: run,
      durationMs: 9,
      error: 'provider returned 529 overloaded',
    });
    expect(result.isError).toBe(true);
    expect(result.finalResponse).toBe('provider returned 529 overloaded');
    expect(result.items).toEqual(expectedItems);
    expect(result.numTurns).toBe(2);
  });

  it('treats a completed run as success, whatever error it is given', () => {
    const result = TurnResult.fromMessages({
      ...ok,
      sessionId: 's',
      messages: run,
      durationMs: 9,
      error: null,
    });
    expect(result.isError).toBe(false);
    expect(result.finalResponse).toBe('Created a.txt.');
  });

  it('says how the run stopped: its id, its status and, paused, the tool calls awaiting a decision', () => {
    const paused = TurnResult.fromMessages({
      sessionId: 's',
      runId: 'run_7',
      status: 'paused',
      messages: run.slice(0, 2),
      durationMs: 3,
      awaiting: ['tu_1'],
    });
    expect(paused).toMatchObject({ runId: 'run_7', status: 'paused', isError: false });
    expect(paused.finalResponse).toBe("I'll create it.");
    expect(paused.awaiting).toEqual([expectedItems[2]]);
    expect(paused.toJsonResult()).toMatchObject({
      run_id: 'run_7',
      status: 'paused',
      awaiting: [{ tool_id: 'tu_1', tool_name: 'write_file', parameters: { path: 'a.txt', content: 'hi' } }],
    });
    // Not paused: nothing awaits, whatever ids are given.
    const capped = TurnResult.fromMessages({
      sessionId: 's',
      runId: 'r',
      status: 'max_steps',
      messages: run,
      durationMs: 1,
      awaiting: ['tu_1'],
    });
    expect(capped).toMatchObject({ status: 'max_steps', isError: false, awaiting: [] });
  });

  it('keeps the partial text of a cancelled run as its final response, as an error', () => {
    const cancelled = TurnResult.fromMessages({
      sessionId: 's',
      runId: 'r',
      status: 'cancelled',
      messages: [{ message: userMessage('q', 1) }, { message: assistantMessage('half an ans', 2) }],
      durationMs: 1,
    });
    expect(cancelled).toMatchObject({ status: 'cancelled', isError: true, finalResponse: 'half an ans' });
  });
});

describe('TurnResult serialisation', () => {
  const result = TurnResult.fromMessages({ ...ok, sessionId: 'ses_9', messages: run, durationMs: 321 });

  it('toJSON gives exactly the TurnResultData fields', () => {
    const data = result.toJSON();
    expect(data).toEqual<TurnResultData>({
      sessionId: 'ses_9',
      finalResponse: 'Created a.txt.',
      items: expectedItems,
      durationMs: 321,
      numTurns: 2,
      isError: false,
      runId: 'run_1',
      status: 'completed',
      awaiting: [],
    });
    expect(Object.keys(data).sort()).toEqual(
      [
        'durationMs',
        'finalResponse',
        'isError',
        'items',
        'numTurns',
        'sessionId',
        'runId',
        'status',
        'awaiting',
      ].sort(),
    );
    expect(JSON.parse(JSON.stringify(result))).toEqual(data);
    expect(new TurnResult(JSON.parse(JSON.stringify(result)) as TurnResultData).toJSON()).toEqual(data);
  });

  it('toJsonResult gives the snake_case json form', () => {
    expect(result.toJsonResult()).toStrictEqual<JsonResult>({
      session_id: 'ses_9',
      is_error: false,
      duration_ms: 321,
      num_turns: 2,
      result: 'Created a.txt.',
      run_id: 'run_1',
      status: 'completed',
      awaiting: [],
    });
  });

  it('fromJsonResult reads the json form back, without items', () => {
    const json: JsonResult = {
      session_id: 'ses_2',
      is_error: true,
      duration_ms: 77,
      num_turns: 4,
      result: 'boom',
      run_id: 'run_2',
      status: 'error',
      awaiting: [],
    };
    const back = TurnResult.fromJsonResult(json);
    expect(back).toBeInstanceOf(TurnResult);
    expect(back.toJSON()).toEqual<TurnResultData>({
      sessionId: 'ses_2',
      finalResponse: 'boom',
      items: [],
      durationMs: 77,
      numTurns: 4,
      isError: true,
      runId: 'run_2',
      status: 'error',
      awaiting: [],
    });
    expect(back.toJsonResult()).toStrictEqual(json);
  });
});

describe('TurnResult.parse and tryParse', () => {
  const schema = z.object({ name: z.string(), count: z.number().int() });

  it('parses a JSON final response with a schema', () => {
    expect(resultWith('{"name":"a","count":2}').parse(schema)).toEqual({ name: 'a', count: 2 });
    expect(resultWith('  {"name":"a","count":2}\n').parse(schema)).toEqual({ name: 'a', count: 2 });
  });

  it('accepts a ```json fence around the response', () => {
    const fenced = '```json\n{\n  "name": "b",\n  "count": 3\n}\n```';
    expect(resultWith(fenced).parse(schema)).toEqual({ name: 'b', count: 3 });
    expect(resultWith(`\n${fenced}\n\n`).parse(schema)).toEqual({ name: 'b', count: 3 });
    expect(resultWith('```\n{"name":"c","count":4}\n```').parse(schema)).toEqual({ name: 'c', count: 4 });
  });

  it('returns what the schema returns (transforms and stripped keys)', () => {
    const trimmed = z.object({ name: z.string().transform((s) => s.toUpperCase()) });
    expect(resultWith('{"name":"x","extra":true}').parse(trimmed)).toEqual({ name: 'X' });
  });

  it('throws TurnResultParseError for a response that is not JSON', () => {
    const result = resultWith('Sure! Here is the data: name=a');
    expect(() => result.parse(schema)).toThrow(TurnResultParseError);
    try {
      result.parse(schema);
      throw new Error('parse did not throw');
    } catch (err) {
      expect(err).toBeInstanceOf(TurnResultParseError);
      const parseError = err as TurnResultParseError;
      expect(parseError.code).toBe('parse_error');
      expect(parseError.name).toBe('TurnResultParseError');
      expect(parseError.message).toBe('the final response is not valid JSON');
      expect(parseError.text).toBe('Sure! Here is the data: name=a');
      expect(parseError.cause).toBeInstanceOf(SyntaxError);
    }
  });

  it('lets the schema error through for JSON of the wrong shape', () => {
    const result = resultWith('{"name":1}');
    expect(() => result.parse(schema)).toThrow(z.ZodError);
    expect(() => result.parse(schema)).not.toThrow(TurnResultParseError);
  });

  it('tryParse returns the data, or null for bad JSON or a schema mismatch', () => {
    expect(resultWith('```json\n{"name":"a","count":1}\n```').tryParse(schema)).toEqual({
      name: 'a',
      count: 1,
    });
    expect(resultWith('not json').tryParse(schema)).toBeNull();
    expect(resultWith('').tryParse(schema)).toBeNull();
    expect(resultWith('{"name":"a","count":1.5}').tryParse(schema)).toBeNull();
    expect(resultWith('[1,2]').tryParse(schema)).toBeNull();
    expect(resultWith('[1,2]').tryParse(z.array(z.number()))).toEqual([1, 2]);
  });

  it('tryParse trusts only success from any safeParse, not data left on a failure', () => {
    const lenient = { safeParse: (data: unknown) => ({ success: false, data }) };
    expect(resultWith('{"a":1}').tryParse(lenient)).toBeNull();
    const accepting = { safeParse: (data: unknown) => ({ success: true, data }) };
    expect(resultWith('{"a":1}').tryParse(accepting)).toEqual({ a: 1 });
  });
});
