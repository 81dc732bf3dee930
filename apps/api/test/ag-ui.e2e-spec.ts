// AG-UI against the real app, driven by the protocol's own client (@ag-ui/client's HttpAgent, which checks the event
// sequence it receives): a run answered as RUN_STARTED, MESSAGES_SNAPSHOT, the streamed message, the committed
// snapshot (node ids) and RUN_FINISHED; server tool calls with their results; a branch at an earlier message and a
// regeneration; a branch after the run a parentRunId names (and the inputs naming runs that do not fit); an approval as an interrupt resumed with the client's answer; a client tool left pending and
// answered by a tool message; bad input the client surfaces as an error; another user's thread out of reach.

import { randomUUID } from 'node:crypto';
import { HttpAgent } from '@ag-ui/client';
import { EventType, type BaseEvent, type Message } from '@ag-ui/core';
import { eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

let t: TestApp;
let api: Api;
let key: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ api, key } = await newTenant(t, 'ag-ui'));
});

afterAll(async () => {
  await t?.close();
});

function agent(threadId = randomUUID(), credential = key): HttpAgent {
  return new HttpAgent({
    url: `${t.url}/v1/ag-ui`,
    headers: { authorization: `Bearer ${credential}` },
    threadId,
  });
}

async function run(
  a: HttpAgent,
  params: Parameters<HttpAgent['runAgent']>[0] = {},
): Promise<{ events: BaseEvent[]; result: Awaited<ReturnType<HttpAgent['runAgent']>> }> {
  const events: BaseEvent[] = [];
  const result = await a.runAgent(params, {
    onEvent: ({ event }) => {
      events.push(event);
    },
  });
  return { events, result };
}

/** A 1x1 PNG (its type is read from its bytes). */
const PNG_1X1 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

const userMessage = (content: string): Message => ({ id: randomUUID(), role: 'user', content });

/** The event types, runs of content deltas collapsed into one (their number depends on timing). */
function shape(events: BaseEvent[]): string[] {
  const types = events.map((e) => String(e.type));
  return types.filter((type, i) => !(type.endsWith('_CONTENT') && types[i - 1] === type));
}

const brief = (messages: Message[]) =>
  messages.map((m) => ({
    id: m.id,
    role: m.role,
    ...('content' in m && m.content !== undefined ? { content: m.content } : {}),
  }));

describe('AG-UI over HttpAgent', () => {
  it('runs a prompt: the run streamed between two snapshots, the second with node ids', async () => {
    const a = agent();
    a.addMessage(userMessage('hello agents'));
    const { events } = await run(a, { forwardedProps: { model: 'mock:echo' } });
    expect(shape(events)).toEqual([
      EventType.RUN_STARTED,
      EventType.MESSAGES_SNAPSHOT,
      EventType.STEP_STARTED,
      EventType.TEXT_MESSAGE_START,
      EventType.TEXT_MESSAGE_CONTENT,
      EventType.TEXT_MESSAGE_END,
      EventType.STEP_FINISHED,
      EventType.MESSAGES_SNAPSHOT,
      EventType.RUN_FINISHED,
    ]);
    const started = events[0] as BaseEvent & { threadId: string; runId: string };
    expect(started.threadId).toBe(a.threadId);
    expect(brief(a.messages)).toEqual([
      { id: '1', role: 'user', content: 'hello agents' },
      { id: '2', role: 'assistant', content: 'Echo: hello agents' },
    ]);
    const session = await api.get(`/v1/sessions/${a.threadId}`);
    expect(session.body).toMatchObject({ model: 'mock:echo', status: 'idle' });
  });

  it('streams server tool calls, their results and reasoning', async () => {
    const a = agent();
    a.addMessage(userMessage('what is 6*7?'));
    const { events } = await run(a, {
      forwardedProps: {
        model: 'mock:script',
        opts: {
          serverTools: ['calculator'],
          script: [
            { thinking: 'multiply', toolCalls: [{ name: 'calculator', input: { expression: '6*7' } }] },
            { text: 'It is 42.' },
          ],
        },
      },
    });
    const types = shape(events);
    for (const type of [
      EventType.REASONING_START,
      EventType.REASONING_MESSAGE_CONTENT,
      EventType.REASONING_END,
      EventType.TOOL_CALL_START,
      EventType.TOOL_CALL_ARGS,
      EventType.TOOL_CALL_END,
      EventType.TOOL_CALL_RESULT,
    ]) {
      expect(types).toContain(type);
    }
    expect(types.filter((type) => type === String(EventType.STEP_STARTED))).toHaveLength(2);
    const args = events.find((e) => e.type === EventType.TOOL_CALL_ARGS) as BaseEvent & { delta: string };
    expect(JSON.parse(args.delta)).toEqual({ expression: '6*7' });
    const result = events.find((e) => e.type === EventType.TOOL_CALL_RESULT) as BaseEvent & {
      content: string;
    };
    expect(result.content).toContain('42');
    expect(a.messages.map((m) => m.role)).toEqual(['user', 'reasoning', 'assistant', 'tool', 'assistant']);
    expect(a.messages[a.messages.length - 1]).toMatchObject({ role: 'assistant', content: 'It is 42.' });
  });

  it('branches at an earlier message, and regenerates a prompt the thread holds', async () => {
    const a = agent();
    a.addMessage(userMessage('one'));
    await run(a, { forwardedProps: { model: 'mock:echo', opts: { numbered: true } } });
    a.addMessage(userMessage('two'));
    await run(a);
    expect(brief(a.messages).map((m) => m.id)).toEqual(['1', '2', '3', '4']);
    // Back to the first reply, and a different second prompt: a branch after node 2.
    a.setMessages([...a.messages.slice(0, 2), userMessage('deux')]);
    await run(a);
    expect(brief(a.messages)).toEqual([
      { id: '1', role: 'user', content: 'one' },
      { id: '2', role: 'assistant', content: 'Echo #1: one' },
      { id: '5', role: 'user', content: 'deux' },
      { id: '6', role: 'assistant', content: 'Echo #1: deux' },
    ]);
    const turns = await api.get(`/v1/sessions/${a.threadId}/turns`);
    expect(turns.body.data[1].edits).toEqual([3, 5]);
    // A last message the thread holds (node 1): its turn again.
    a.setMessages(a.messages.slice(0, 1));
    await run(a);
    expect(brief(a.messages)).toEqual([
      { id: '1', role: 'user', content: 'one' },
      { id: '7', role: 'assistant', content: 'Echo #2: one' },
    ]);
  });

  it('branches after the run parentRunId names; the later run stays a sibling branch', async () => {
    const a = agent();
    // HttpAgent sends no parentRunId of its own: a middleware adds it, as a client that offers it would.
    let parentRunId: string | undefined;
    a.use((input, next) => next.run(parentRunId === undefined ? input : { ...input, parentRunId }));
    const runOne = randomUUID();
    const runTwo = randomUUID();
    a.addMessage(userMessage('one'));
    await run(a, { runId: runOne, forwardedProps: { model: 'mock:echo' } });
    a.addMessage(userMessage('two'));
    await run(a, { runId: runTwo });
    expect(brief(a.messages).map((m) => m.id)).toEqual(['1', '2', '3', '4']);

    // The client keeps the path it holds (the message before the new one is the head): parentRunId decides.
    parentRunId = runOne;
    const deux = userMessage('deux');
    a.addMessage(deux);
    const third = await run(a);
    expect(third.events[0]).toMatchObject({ type: EventType.RUN_STARTED, parentRunId: runOne });
    // The opening snapshot: the new path, the prompt after run one's reply.
    const opening = third.events[1] as BaseEvent & { messages: Message[] };
    expect(brief(opening.messages)).toEqual([
      { id: '1', role: 'user', content: 'one' },
      { id: '2', role: 'assistant', content: 'Echo: one' },
      { id: deux.id, role: 'user', content: 'deux' },
    ]);
    expect(brief(a.messages)).toEqual([
      { id: '1', role: 'user', content: 'one' },
      { id: '2', role: 'assistant', content: 'Echo: one' },
      { id: '5', role: 'user', content: 'deux' },
      { id: '6', role: 'assistant', content: 'Echo: deux' },
    ]);
    const tree = (await api.get(`/v1/sessions/${a.threadId}/tree`)).body as {
      nodes: Array<{ id: number; parentId: number | null }>;
      path: number[];
    };
    expect(tree.nodes.map((n) => [n.id, n.parentId])).toEqual([
      [1, null],
      [2, 1],
      [3, 2],
      [4, 3],
      [5, 2],
      [6, 5],
    ]);
    expect(tree.path).toEqual([1, 2, 5, 6]);
    expect((await api.get(`/v1/sessions/${a.threadId}/turns`)).body.data[1].edits).toEqual([3, 5]);

    // Both named: the message before the new one (a node off the head) is the more precise and wins.
    parentRunId = runTwo;
    a.setMessages([...a.messages.slice(0, 2), userMessage('drei')]);
    await run(a);
    expect(brief(a.messages).map((m) => m.content)).toEqual(['one', 'Echo: one', 'drei', 'Echo: drei']);
    expect((await api.get(`/v1/sessions/${a.threadId}/turns`)).body.data[1].edits).toEqual([3, 5, 7]);

    // A run that ended at the head: the prompt continues the active path.
    parentRunId = undefined;
    const runFour = randomUUID();
    a.addMessage(userMessage('vier'));
    await run(a, { runId: runFour });
    parentRunId = runFour;
    a.addMessage(userMessage('fünf'));
    await run(a);
    expect(brief(a.messages).map((m) => m.id)).toEqual(['1', '2', '7', '8', '9', '10', '11', '12']);
  });

  it('refuses a parentRunId that names no run of the thread, or a run with no reply to branch after', async () => {
    const a = agent();
    const runOne = randomUUID();
    a.addMessage(userMessage('one'));
    const first = await run(a, { runId: runOne, forwardedProps: { model: 'mock:echo' } });
    const input = (parentRunId: string, threadId = a.threadId) => ({
      threadId,
      runId: randomUUID(),
      parentRunId,
      messages: [{ id: randomUUID(), role: 'user', content: 'branch' }],
      forwardedProps: { model: 'mock:echo' },
    });
    const notFound = (res: { status: number; body: { error: { code: string; details?: unknown } } }) => {
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'not_found', details: { field: 'parentRunId' } });
    };
    // A run id the thread never saw, and Canopy's own run id (not the client's).
    notFound(await api.post('/v1/ag-ui', input('never-sent')));
    const started = first.events[0] as BaseEvent & { metadata: { canopyRunId: string } };
    notFound(await api.post('/v1/ag-ui', input(started.metadata.canopyRunId)));

    // A run of another thread of the tenant: not this thread's.
    const failing = agent();
    const failedRun = randomUUID();
    failing.addMessage(userMessage('fail'));
    const failed = await run(failing, {
      runId: failedRun,
      forwardedProps: { model: 'mock:script', opts: { script: [{ error: 'the model failed' }] } },
    });
    expect(failed.events[failed.events.length - 1]!.type).toBe(EventType.RUN_ERROR);
    notFound(await api.post('/v1/ag-ui', input(failedRun)));
    // On its own thread, that run committed nothing: there is no reply to branch after.
    const failingTree = (await api.get(`/v1/sessions/${failing.threadId}/tree`)).body as unknown;
    const noReply = await api.post('/v1/ag-ui', input(failedRun, failing.threadId));
    expect(noReply.status).toBe(400);
    expect(noReply.body.error).toMatchObject({ code: 'bad_request', details: { field: 'parentRunId' } });
    expect((await api.get(`/v1/sessions/${failing.threadId}/tree`)).body).toEqual(failingTree);

    // Another tenant naming the thread and its run: a thread of its own, which has no runs (nothing is created).
    const other = await newTenant(t, 'ag-ui parent runs');
    notFound(await other.api.post('/v1/ag-ui', input(runOne)));
    expect((await other.api.get(`/v1/sessions/${a.threadId}`)).status).toBe(404);
    // A thread that does not exist yet has no run to name: refused before it is created.
    const fresh = randomUUID();
    notFound(await api.post('/v1/ag-ui', input(runOne, fresh)));
    expect((await api.get(`/v1/sessions/${fresh}`)).status).toBe(404);

    // Nothing of the thread was touched.
    const tree = await api.get(`/v1/sessions/${a.threadId}/tree`);
    expect(tree.body.nodes).toHaveLength(2);
  });

  it('interrupts for an approval and resumes with the answer; leaves a client tool call pending for its result', async () => {
    const a = agent();
    a.addMessage(userMessage('deploy from where I am'));
    const first = await run(a, {
      tools: [
        {
          name: 'getLocation',
          description: 'Where the user is',
          parameters: { type: 'object', properties: {} },
        },
      ],
      forwardedProps: {
        model: 'mock:script',
        opts: {
          serverTools: ['deploy'],
          script: [
            { toolCalls: [{ name: 'getLocation', input: {} }] },
            { toolCalls: [{ name: 'deploy', input: { target: 'staging' } }] },
            { text: 'Deployed from Paris.' },
          ],
        },
      },
    });
    // The client tool: the run completed, its call left for the client.
    const finished = first.events[first.events.length - 1] as BaseEvent & {
      outcome?: { type: string; pendingToolCallIds?: string[] };
    };
    expect(finished.type).toBe(EventType.RUN_FINISHED);
    expect(finished.outcome?.type).toBe('success');
    const callId = finished.outcome!.pendingToolCallIds![0]!;
    const call = first.events.find((e) => e.type === EventType.TOOL_CALL_START) as BaseEvent & {
      toolCallId: string;
      toolCallName: string;
    };
    expect(call).toMatchObject({ toolCallId: callId, toolCallName: 'getLocation' });
    // The snapshot the run ended with holds what it has not committed: the prompt (the client's id) and the call.
    expect(a.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(a.messages[1]).toMatchObject({ toolCalls: [{ id: callId, function: { name: 'getLocation' } }] });
    a.addMessage({ id: randomUUID(), role: 'tool', toolCallId: callId, content: 'Paris' });
    const second = await run(a, { tools: [{ name: 'getLocation', description: 'Where the user is' }] });
    const interrupted = second.events[second.events.length - 1] as BaseEvent & {
      outcome?: { type: string; interrupts?: Array<{ id: string; toolCallId: string; reason: string }> };
    };
    expect(interrupted.outcome?.type).toBe('interrupt');
    const [interrupt] = interrupted.outcome!.interrupts!;
    expect(interrupt).toMatchObject({ reason: 'tool_approval' });
    expect(a.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(a.messages[2]).toMatchObject({ toolCallId: callId, content: 'Paris' });
    expect((await api.get(`/v1/sessions/${a.threadId}`)).body.status).toBe('paused');
    // Resumed with the approval: the deploy runs and the reply follows.
    const third = await run(a, {
      resume: [{ interruptId: interrupt!.id, status: 'resolved', payload: { approved: true } }],
    });
    expect(third.events[third.events.length - 1]!.type).toBe(EventType.RUN_FINISHED);
    const result = third.events.find((e) => e.type === EventType.TOOL_CALL_RESULT) as BaseEvent & {
      content: string;
    };
    expect(result.content).toBe('deployed to staging');
    expect(a.messages[a.messages.length - 1]).toMatchObject({
      role: 'assistant',
      content: 'Deployed from Paris.',
    });
    expect((await api.get(`/v1/sessions/${a.threadId}`)).body.status).toBe('idle');
  });

  it('resumes two approvals answered together (one approved, one cancelled); refuses an answer to one of them', async () => {
    const a = agent();
    a.addMessage(userMessage('deploy both'));
    const first = await run(a, {
      forwardedProps: {
        model: 'mock:script',
        opts: {
          serverTools: ['deploy'],
          script: [
            {
              toolCalls: [
                { name: 'deploy', input: { target: 'staging' } },
                { name: 'deploy', input: { target: 'production' } },
              ],
            },
            { text: 'One deployed.' },
          ],
        },
      },
    });
    const outcome = (
      first.events[first.events.length - 1] as BaseEvent & {
        outcome: { interrupts: Array<{ id: string }> };
      }
    ).outcome;
    const [staging, production] = outcome.interrupts;
    expect(outcome.interrupts).toHaveLength(2);
    // One answer of two: refused (the run would go on waiting), nothing decided.
    const partial = await api.post('/v1/ag-ui', {
      threadId: a.threadId,
      runId: 'partial',
      messages: [],
      resume: [{ interruptId: staging!.id, status: 'resolved', payload: { approved: true } }],
    });
    expect(partial.status).toBe(400);
    expect(partial.body.error.details).toMatchObject({ field: 'resume', missing: [production!.id] });
    const both = await run(a, {
      resume: [
        { interruptId: staging!.id, status: 'resolved', payload: { approved: true } },
        { interruptId: production!.id, status: 'cancelled' },
      ],
    });
    const results = both.events
      .filter((e) => e.type === EventType.TOOL_CALL_RESULT)
      .map((e) => [
        (e as BaseEvent & { toolCallId: string }).toolCallId,
        (e as BaseEvent & { content: string }).content,
      ]);
    expect(results).toContainEqual([staging!.id, 'deployed to staging']);
    expect(results.find(([id]) => id === production!.id)?.[1]).not.toContain('deployed');
    expect(a.messages[a.messages.length - 1]).toMatchObject({ role: 'assistant', content: 'One deployed.' });
  });

  it('takes image parts as attachments, and refuses one whose URL leads to a private address', async () => {
    const a = agent();
    a.addMessage({
      id: randomUUID(),
      role: 'user',
      content: [
        { type: 'text', text: 'what is this?' },
        { type: 'image', source: { type: 'data', value: PNG_1X1, mimeType: 'image/png' } },
      ],
    });
    await run(a, { forwardedProps: { model: 'mock:echo' } });
    expect(a.messages[0]).toMatchObject({
      id: '1',
      role: 'user',
      content: [
        { type: 'text', text: 'what is this?' },
        // Inline data is kept as a Canopy file: the snapshot names it by its id.
        {
          type: 'image',
          source: { type: 'file', provider: 'canopy', mimeType: 'image/png', value: expect.any(String) },
        },
      ],
    });
    const fileId = (a.messages[0] as { content: Array<{ source?: { value: string } }> }).content[1]!.source!
      .value;
    // A later message names the same file by that id.
    a.addMessage({
      id: randomUUID(),
      role: 'user',
      content: [
        { type: 'text', text: 'and again?' },
        { type: 'image', source: { type: 'file', value: fileId, mimeType: 'image/png' } },
      ],
    });
    await run(a);
    const tree = await api.get(`/v1/sessions/${a.threadId}/tree`);
    const blocks = (
      tree.body.nodes as Array<{ message: { content: Array<{ type: string; fileId?: string }> } }>
    ).map((n) => n.message.content);
    expect(blocks[0]!.map((b) => b.type)).toEqual(['text', 'attachment']);
    expect(blocks[2]![1]).toMatchObject({ type: 'attachment', fileId });

    const refused = await api.post('/v1/ag-ui', {
      threadId: a.threadId,
      runId: 'r2',
      messages: [
        {
          id: 'm2',
          role: 'user',
          content: [
            {
              type: 'image',
              source: { type: 'url', value: 'http://127.0.0.1:9/x.png', mimeType: 'image/png' },
            },
          ],
        },
      ],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details.field).toBe('messages.0.content.0.source.value');
    expect((await api.get(`/v1/sessions/${a.threadId}/tree`)).body.nodes).toHaveLength(4);
  });

  it('ends the run’s events with RUN_ERROR when the credential is revoked mid-stream', async () => {
    const second = await api.post('/v1/keys', { name: 'revoked mid-stream' });
    const a = agent(randomUUID(), second.body.apiKey as string);
    a.addMessage(userMessage(Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ')));
    const events: BaseEvent[] = [];
    const running = a.runAgent(
      { forwardedProps: { model: 'mock:echo', opts: { delayMs: 20 } } },
      { onEvent: ({ event }) => void events.push(event) },
    );
    await eventually(() => expect(events.some((e) => e.type === EventType.TEXT_MESSAGE_CONTENT)).toBe(true));
    expect((await api.delete(`/v1/keys/${second.body.id as string}`)).status).toBe(204);
    await running; // the client ends the run on RUN_ERROR
    expect(events[events.length - 1]).toMatchObject({ type: EventType.RUN_ERROR, code: 'unauthorized' });
  });

  it('answers bad input with a 400 the client throws, and another user’s thread with a 404', async () => {
    // The client logs what it throws.
    const logged = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const noModel = agent();
    noModel.addMessage(userMessage('hi'));
    await expect(run(noModel)).rejects.toThrow(/400|bad_request/);
    // Fields a newer client adds are accepted.
    const newer = await fetch(`${t.url}/v1/ag-ui`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({
        threadId: randomUUID(),
        runId: 'r1',
        protocolVersion: '9.9',
        aFieldOfTomorrow: { x: 1 },
        messages: [{ id: 'm1', role: 'user', content: 'hi', alsoNew: true }],
        forwardedProps: { model: 'mock:echo' },
      }),
    });
    expect(newer.status).toBe(200);
    expect(await newer.text()).toContain('RUN_FINISHED');
    const malformed = await api.post('/v1/ag-ui', {
      threadId: randomUUID(),
      runId: randomUUID(),
      messages: [{ id: 'm1', role: 'user' }],
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('bad_request');

    const alice = (await api.post('/v1/tokens', { userId: 'alice' })).body.token as string;
    const mallory = (await api.post('/v1/tokens', { userId: 'mallory' })).body.token as string;
    const threadId = randomUUID();
    const hers = agent(threadId, alice);
    const herRun = randomUUID();
    hers.addMessage(userMessage('mine'));
    await run(hers, { runId: herRun, forwardedProps: { model: 'mock:echo' } });
    const stored = async () => {
      const { userId, status, path, updatedAt, usage } = (await api.get(`/v1/sessions/${threadId}`)).body;
      return { userId, status, path, updatedAt, usage } as Record<string, unknown>;
    };
    const before = await stored();
    const his = agent(threadId, mallory);
    his.addMessage(userMessage('not mine'));
    await expect(run(his, { forwardedProps: { model: 'mock:echo' } })).rejects.toThrow(/404|not_found/);
    // Naming her run as the parent, on her thread or on a thread of his own: not found either way.
    const asMallory = api.as(mallory);
    const branch = (id: string) => ({
      threadId: id,
      runId: randomUUID(),
      parentRunId: herRun,
      messages: [{ id: randomUUID(), role: 'user', content: 'not mine' }],
      forwardedProps: { model: 'mock:echo' },
    });
    expect((await asMallory.post('/v1/ag-ui', branch(threadId))).status).toBe(404);
    const own = agent(randomUUID(), mallory);
    own.addMessage(userMessage('his own'));
    await run(own, { forwardedProps: { model: 'mock:echo' } });
    expect((await asMallory.post('/v1/ag-ui', branch(own.threadId))).status).toBe(404);
    const turns = await api.get(`/v1/sessions/${threadId}/turns`);
    expect(turns.body.data).toHaveLength(1);
    expect(await stored()).toEqual(before);
    expect(before.userId).toBe('alice');
    expect(logged).toHaveBeenCalledTimes(2);
    logged.mockRestore();
  });
});
