// The UI message stream translation, read back the way a client reads it: the chunks serialized as SSE by the AI
// SDK's own JsonToSseTransformStream, parsed and checked by its chunk schema (uiMessageChunkSchema, as
// DefaultChatTransport does) and folded into a message by readUIMessageStream. A stream resumed from a snapshot
// taken mid-run must end in the same message as the stream followed from the start.

import {
  JsonToSseTransformStream,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
  type UIMessage,
  type UIMessageChunk,
} from 'ai';
import {
  assistantMessage,
  emptyUsage,
  toolResultMessage,
  userMessage,
  type ClientTool,
  type InFlight,
  type SessionEvent,
  type SessionEventInput,
} from '@canopy/core';
import { UiMessageChunks, type UiChunk } from './ui-message-chunks';

const RUN = 'run-1';
let seq = 0;
const ev = (e: SessionEventInput): SessionEvent => ({ ...e, seq: ++seq, sessionId: 's', at: 0 });

const prompt = userMessage('add 1 and 1');
const step1 = assistantMessage([
  { type: 'thinking', text: 'hmm' },
  { type: 'text', text: 'Let me add.' },
  { type: 'tool_use', id: 't1', name: 'calc', input: { a: 1, b: 1 } },
]);
const results = toolResultMessage([{ type: 'tool_result', toolUseId: 't1', content: '2', isError: false }]);
const step2 = assistantMessage('It is 2.');

/** A whole run: a reasoning, text and tool call step, the tool's result, a text step, its end. */
function wholeRun(): SessionEvent[] {
  return [
    ev({ type: 'status', data: { status: 'busy', runId: RUN } }),
    ev({ type: 'message', data: { runId: RUN, message: prompt } }),
    ev({ type: 'thinking_start', data: { runId: RUN, index: 0 } }),
    ev({ type: 'thinking_delta', data: { runId: RUN, index: 0, delta: 'hmm' } }),
    ev({ type: 'thinking_end', data: { runId: RUN, index: 0 } }),
    ev({ type: 'text_start', data: { runId: RUN, index: 1 } }),
    ev({ type: 'text_delta', data: { runId: RUN, index: 1, delta: 'Let me ' } }),
    ev({ type: 'text_delta', data: { runId: RUN, index: 1, delta: 'add.' } }),
    ev({ type: 'text_end', data: { runId: RUN, index: 1 } }),
    ev({ type: 'tool_use_start', data: { runId: RUN, index: 2, id: 't1', name: 'calc' } }),
    ev({ type: 'tool_use_delta', data: { runId: RUN, index: 2, id: 't1', delta: '{"a":1,"b":1}' } }),
    ev({
      type: 'tool_use_end',
      data: {
        runId: RUN,
        index: 2,
        block: { type: 'tool_use', id: 't1', name: 'calc', input: { a: 1, b: 1 } },
      },
    }),
    ev({ type: 'message', data: { runId: RUN, message: step1 } }),
    ev({ type: 'step', data: { runId: RUN, step: 1, usage: emptyUsage(), finishReason: 'tool_use' } }),
    ev({ type: 'tool_progress', data: { runId: RUN, toolUseId: 't1', payload: { done: 1 } } }),
    ev({
      type: 'tool_result',
      data: { runId: RUN, toolName: 'calc', result: results.content[0] as never },
    }),
    ev({ type: 'message', data: { runId: RUN, message: results } }),
    ...secondStep(),
  ];
}

/** The second step, from its first delta on (what follows a snapshot taken after 'It '). */
function secondStep(from: 'start' | 'after-first-delta' = 'start'): SessionEvent[] {
  return [
    ...(from === 'start'
      ? [
          ev({ type: 'text_start', data: { runId: RUN, index: 0 } }),
          ev({ type: 'text_delta', data: { runId: RUN, index: 0, delta: 'It ' } }),
        ]
      : []),
    ev({ type: 'text_delta', data: { runId: RUN, index: 0, delta: 'is 2.' } }),
    ev({ type: 'text_end', data: { runId: RUN, index: 0 } }),
    ev({ type: 'message', data: { runId: RUN, message: step2 } }),
    ev({ type: 'step', data: { runId: RUN, step: 2, usage: emptyUsage(), finishReason: 'stop' } }),
    ev({ type: 'status', data: { status: 'idle', runId: null } }),
    ev({
      type: 'turn',
      data: {
        runId: RUN,
        stop: 'stop',
        reason: 'stop',
        messages: [prompt, step1, results, step2],
        usage: emptyUsage(),
      },
    }),
  ];
}

/** What a client makes of the chunks: serialized, parsed and checked by the SDK's schema, folded into a message. */
async function clientSees(chunks: UiChunk[]): Promise<{ message: UIMessage | undefined; errors: unknown[] }> {
  const sse = new ReadableStream<unknown>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  })
    .pipeThrough(new JsonToSseTransformStream())
    .pipeThrough(new TextEncoderStream());
  const parsed = parseJsonEventStream({ stream: sse, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream<{ success: boolean; value?: UIMessageChunk; error?: unknown }, UIMessageChunk>({
      transform(result, controller) {
        if (!result.success) throw result.error instanceof Error ? result.error : new Error('invalid chunk');
        controller.enqueue(result.value!);
      },
    }),
  );
  const errors: unknown[] = [];
  let message: UIMessage | undefined;
  for await (const state of readUIMessageStream({ stream: parsed, onError: (e) => errors.push(e) }))
    message = state;
  return { message, errors };
}

function translate(events: SessionEvent[], mapper = new UiMessageChunks(RUN, [])): UiChunk[] {
  const out = mapper.start();
  for (const e of events) out.push(...mapper.map(e));
  if (mapper.finishing) out.push(...mapper.finish({ nodeId: 2, versions: [2], versionIndex: 0 }));
  return out;
}

const EXPECTED_PARTS = [
  { type: 'step-start' },
  { type: 'reasoning', text: 'hmm', state: 'done' },
  { type: 'text', text: 'Let me add.', state: 'done' },
  {
    type: 'tool-calc',
    toolCallId: 't1',
    state: 'output-available',
    input: { a: 1, b: 1 },
    output: 2,
  },
  { type: 'step-start' },
  { type: 'text', text: 'It is 2.', state: 'done' },
];

describe('UiMessageChunks', () => {
  it('translates a run into chunks the SDK parses and folds into the reply, metadata on finish', async () => {
    const chunks = translate(wholeRun());
    expect(chunks[0]).toEqual({ type: 'start', messageId: RUN });
    expect(chunks[chunks.length - 1]).toEqual({
      type: 'finish',
      finishReason: 'stop',
      messageMetadata: { nodeId: 2, versions: [2], versionIndex: 0 },
    });
    expect(chunks).toContainEqual({
      type: 'data-tool-progress',
      id: 't1',
      data: { toolCallId: 't1', payload: { done: 1 } },
    });
    const { message, errors } = await clientSees(chunks);
    expect(errors).toEqual([]);
    expect(message).toMatchObject({ id: RUN, role: 'assistant', metadata: { nodeId: 2 } });
    expect(message!.parts.filter((p) => p.type !== 'data-tool-progress')).toMatchObject(EXPECTED_PARTS);
  });

  it('resumed from a snapshot taken mid-step, ends in the same message as followed from the start', async () => {
    const inFlight: InFlight = {
      runId: RUN,
      kind: 'prompt',
      pending: [prompt, step1, results],
      partial: assistantMessage([{ type: 'text', text: 'It ' }]),
      awaiting: [],
    };
    const mapper = new UiMessageChunks(RUN, []);
    const chunks = [...mapper.start(), ...mapper.replay(inFlight, false)];
    for (const e of secondStep('after-first-delta')) chunks.push(...mapper.map(e));
    chunks.push(...mapper.finish({ nodeId: 2, versions: [2], versionIndex: 0 }));
    const resumed = await clientSees(chunks);
    const followed = await clientSees(translate(wholeRun()));
    expect(resumed.errors).toEqual([]);
    const withoutProgress = (m: UIMessage | undefined) =>
      m!.parts.filter((p) => p.type !== 'data-tool-progress');
    expect(withoutProgress(resumed.message)).toEqual(withoutProgress(followed.message));
  });

  it('ends a paused run with approval requests for server tools, none for a client tool the client runs', async () => {
    const tools: ClientTool[] = [{ name: 'where', description: 'location', inputSchema: {} }];
    const uses = [
      { type: 'tool_use' as const, id: 'd1', name: 'deploy', input: { target: 'staging' } },
      { type: 'tool_use' as const, id: 'w1', name: 'where', input: {} },
    ];
    const mapper = new UiMessageChunks(RUN, tools);
    const chunks = [
      ...mapper.start(),
      ...uses.flatMap((block, index) =>
        mapper.map(ev({ type: 'tool_use_end', data: { runId: RUN, index, block } })),
      ),
      ...mapper.map(
        ev({ type: 'step', data: { runId: RUN, step: 1, usage: emptyUsage(), finishReason: 'tool_use' } }),
      ),
      ...mapper.map(ev({ type: 'pause', data: { runId: RUN, reason: 'approval', toolUses: uses } })),
    ];
    expect(chunks.filter((c) => c.type === 'tool-approval-request')).toEqual([
      { type: 'tool-approval-request', approvalId: 'd1', toolCallId: 'd1' },
    ]);
    expect(chunks[chunks.length - 1]).toEqual({ type: 'finish', finishReason: 'tool-calls' });
    const { message } = await clientSees(chunks);
    expect(message!.parts.map((p) => [p.type, (p as { state?: string }).state])).toEqual([
      ['step-start', undefined],
      ['tool-deploy', 'approval-requested'],
      ['tool-where', 'input-available'],
    ]);
    // The same pause, replayed for a client that comes back.
    const replayed = new UiMessageChunks(RUN, tools);
    const again = [
      ...replayed.start(),
      ...replayed.replay(
        {
          runId: RUN,
          kind: 'prompt',
          pending: [prompt, assistantMessage(uses)],
          partial: null,
          awaiting: uses,
        },
        true,
      ),
    ];
    expect((await clientSees(again)).message!.parts).toEqual(message!.parts);
  });

  it('ends a cancelled run with abort and a failed one with error', async () => {
    const cancelled = new UiMessageChunks(RUN, []);
    const aborted = [
      ...cancelled.start(),
      ...cancelled.map(ev({ type: 'text_delta', data: { runId: RUN, index: 0, delta: 'par' } })),
      ...cancelled.map(ev({ type: 'cancelled', data: { runId: RUN, partial: [], usage: emptyUsage() } })),
    ];
    expect(aborted[aborted.length - 1]).toEqual({ type: 'abort', reason: 'cancelled' });
    expect((await clientSees(aborted)).errors).toEqual([]);

    const failed = new UiMessageChunks(RUN, []);
    const chunks = [
      ...failed.start(),
      ...failed.map(ev({ type: 'error', data: { runId: RUN, code: 'rate_limited', message: 'slow down' } })),
    ];
    expect(chunks[chunks.length - 1]).toEqual({ type: 'error', errorText: 'rate_limited: slow down' });
    const seen = await clientSees(chunks);
    expect(String(seen.errors[0])).toContain('rate_limited: slow down');
  });
});
