// The AG-UI translation: every event it makes passes the protocol's own schema (@ag-ui/core's EventSchemas), in the
// order the protocol wants (a step opened before its messages, every message and tool call closed before its step
// ends); a pause for an approval is an interrupt, a client tool's call a pending one; the conversation as AG-UI
// messages passes the protocol's message schema.

import { EventType, type BaseEvent } from '@ag-ui/core';
import { EventSchemas, MessageSchema } from '@ag-ui/core/schemas';
import {
  assistantMessage,
  emptyUsage,
  toolResultMessage,
  Tree,
  userMessage,
  type SessionEvent,
  type SessionEventInput,
} from '@canopy/core';
import { AgUiEvents, agUiMessagesOf } from './ag-ui-events';

const RUN = 'run-1';
let seq = 0;
const ev = (e: SessionEventInput): SessionEvent => ({ ...e, seq: ++seq, sessionId: 's', at: 0 });

function run(events: SessionEvent[], mapper = new AgUiEvents(RUN, [])): BaseEvent[] {
  const out = events.flatMap((e) => mapper.map(e));
  if (mapper.finishing) out.push(...mapper.finish());
  const finished = mapper.runFinished('thread', 'client-run');
  if (finished) out.push(finished);
  return out;
}

describe('AgUiEvents', () => {
  it('translates a run into valid events, each step closed with what it opened', () => {
    const block = { type: 'tool_use' as const, id: 't1', name: 'calc', input: { a: 1 } };
    const events = run([
      ev({ type: 'thinking_start', data: { runId: RUN, index: 0 } }),
      ev({ type: 'thinking_delta', data: { runId: RUN, index: 0, delta: 'hmm' } }),
      ev({ type: 'thinking_end', data: { runId: RUN, index: 0 } }),
      ev({ type: 'text_start', data: { runId: RUN, index: 1 } }),
      ev({ type: 'text_delta', data: { runId: RUN, index: 1, delta: 'Adding.' } }),
      ev({ type: 'tool_use_start', data: { runId: RUN, index: 2, id: 't1', name: 'calc' } }),
      ev({ type: 'tool_use_end', data: { runId: RUN, index: 2, block } }),
      ev({ type: 'step', data: { runId: RUN, step: 1, usage: emptyUsage(), finishReason: 'tool_use' } }),
      ev({
        type: 'tool_result',
        data: {
          runId: RUN,
          toolName: 'calc',
          result: { type: 'tool_result', toolUseId: 't1', content: '2', isError: false },
        },
      }),
      ev({ type: 'tool_progress', data: { runId: RUN, toolUseId: 't1', payload: 50 } }),
      ev({ type: 'text_delta', data: { runId: RUN, index: 0, delta: 'Two.' } }),
      ev({ type: 'step', data: { runId: RUN, step: 2, usage: emptyUsage(), finishReason: 'stop' } }),
      ev({
        type: 'turn',
        data: { runId: RUN, stop: 'stop', reason: 'stop', messages: [], usage: emptyUsage() },
      }),
    ]);
    for (const event of events) expect(EventSchemas.safeParse(event).error).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual([
      EventType.STEP_STARTED,
      EventType.REASONING_START,
      EventType.REASONING_MESSAGE_START,
      EventType.REASONING_MESSAGE_CONTENT,
      EventType.REASONING_MESSAGE_END,
      EventType.REASONING_END,
      EventType.TEXT_MESSAGE_START,
      EventType.TEXT_MESSAGE_CONTENT,
      EventType.TOOL_CALL_START,
      EventType.TOOL_CALL_ARGS, // the whole input: the call streamed none
      EventType.TOOL_CALL_END,
      EventType.TEXT_MESSAGE_END, // still open when the step ended
      EventType.STEP_FINISHED,
      EventType.TOOL_CALL_RESULT,
      EventType.CUSTOM,
      EventType.STEP_STARTED,
      EventType.TEXT_MESSAGE_START, // a delta of a text the stream had not started
      EventType.TEXT_MESSAGE_CONTENT,
      EventType.TEXT_MESSAGE_END,
      EventType.STEP_FINISHED,
      EventType.RUN_FINISHED,
    ]);
    expect(events[9]).toMatchObject({ toolCallId: 't1', delta: '{"a":1}' });
    expect(events[events.length - 1]).toEqual({
      type: EventType.RUN_FINISHED,
      threadId: 'thread',
      runId: 'client-run',
      metadata: { canopyRunId: RUN },
    });
  });

  it('ends a pause with an interrupt per approval and leaves a client tool’s call pending', () => {
    const uses = [
      { type: 'tool_use' as const, id: 'd1', name: 'deploy', input: {} },
      { type: 'tool_use' as const, id: 'w1', name: 'where', input: {} },
    ];
    const both = run(
      [ev({ type: 'pause', data: { runId: RUN, reason: 'approval', toolUses: uses } })],
      new AgUiEvents(RUN, [{ name: 'where', description: 'location', inputSchema: {} }]),
    );
    const finished = both[both.length - 1]!;
    expect(EventSchemas.safeParse(finished).error).toBeUndefined();
    expect(finished).toMatchObject({
      outcome: { type: 'interrupt', interrupts: [{ id: 'd1', toolCallId: 'd1', reason: 'tool_approval' }] },
    });
    const clientOnly = run(
      [ev({ type: 'pause', data: { runId: RUN, reason: 'client_tool', toolUses: [uses[1]!] } })],
      new AgUiEvents(RUN, [{ name: 'where', description: 'location', inputSchema: {} }]),
    );
    expect(clientOnly[clientOnly.length - 1]).toMatchObject({
      outcome: { type: 'success', pendingToolCallIds: ['w1'] },
    });
  });

  it('ends a cancelled run with a cancelled outcome and a failed one with RUN_ERROR only', () => {
    const cancelled = run([
      ev({ type: 'cancelled', data: { runId: RUN, partial: [], usage: emptyUsage() } }),
    ]);
    expect(cancelled[cancelled.length - 1]).toMatchObject({ outcome: { type: 'cancelled' } });
    const failed = run([
      ev({ type: 'text_delta', data: { runId: RUN, index: 0, delta: 'par' } }),
      ev({ type: 'error', data: { runId: RUN, code: 'provider_error', message: 'down' } }),
    ]);
    for (const event of failed) expect(EventSchemas.safeParse(event).error).toBeUndefined();
    expect(failed.map((e) => e.type).slice(-3)).toEqual([
      EventType.TEXT_MESSAGE_END,
      EventType.STEP_FINISHED,
      EventType.RUN_ERROR,
    ]);
  });
});

describe('agUiMessagesOf', () => {
  it('gives the path as valid AG-UI messages with node ids', () => {
    const tree = new Tree()
      .push(userMessage('hi'))
      .push(
        assistantMessage([
          { type: 'thinking', text: 'think' },
          { type: 'tool_use', id: 't1', name: 'calc', input: { a: 1 } },
        ]),
      )
      .push(toolResultMessage([{ type: 'tool_result', toolUseId: 't1', content: 'oops', isError: true }]))
      .push(assistantMessage('done'));
    const messages = agUiMessagesOf(tree, [], [{ id: 'new', role: 'user', content: 'next' }]);
    for (const m of messages) expect(MessageSchema.safeParse(m).error).toBeUndefined();
    expect(messages).toEqual([
      { id: '1', role: 'user', content: 'hi' },
      { id: '2.reasoning', role: 'reasoning', content: 'think' },
      {
        id: '2',
        role: 'assistant',
        toolCalls: [{ id: 't1', type: 'function', function: { name: 'calc', arguments: '{"a":1}' } }],
      },
      { id: '3.t1', role: 'tool', toolCallId: 't1', content: 'oops', error: 'oops' },
      { id: '4', role: 'assistant', content: 'done' },
      { id: 'new', role: 'user', content: 'next' },
    ]);
  });
});
