// Results that say what happened and commands that refuse what would corrupt a conversation, over the
// public API. A `wait: true` answer (TurnResult, or format "json") carries the run's id and status — completed,
// paused (with the tool calls awaiting a decision), cancelled (with the partial text it streamed), error,
// max_steps — and its message ids stay the same across a pause and resume; the SDK's run() reads the same. An
// edit after an assistant message with tool uses is refused (422 tool_use_node); a resume that does not say which
// of several awaited tool uses it decides is refused (400 naming them).

import { Canopy } from '@canopy/client';
import type { JsonResult, MessageItem, ToolCallItem } from '@canopy/core';
import { Api, newTenant } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';
import type { RunView, SessionDetail, TreeView, TurnResult } from './support/views';

let t: TestApp;
let api: Api;
let key: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ api, key } = await newTenant(t, 'results'));
});

afterAll(async () => {
  await t?.close();
});

const PICK = { name: 'pick', description: 'The user picks', inputSchema: { type: 'object' } };

async function scripted(script: unknown[], extra: Record<string, unknown> = {}): Promise<string> {
  const res = await api.post('/v1/sessions', {
    model: 'mock:script',
    opts: { script },
    tools: [PICK],
    ...extra,
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

function expectError(res: { status: number; body: unknown }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({
    error: { code, message: expect.any(String) },
    requestId: expect.any(String),
  });
}

describe('wait: true says how the run stopped', () => {
  it('completed: its runId and status, the result’s other fields unchanged', async () => {
    const id = await scripted([{ text: 'all good' }]);
    const res = await api.post<TurnResult>(`/v1/sessions/${id}/prompt`, { content: 'go', wait: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      sessionId: id,
      finalResponse: 'all good',
      isError: false,
      numTurns: 1,
      status: 'completed',
      awaiting: [],
    });
    const run = await api.get<RunView>(`/v1/runs/${res.body.runId}`);
    expect(run.body).toMatchObject({ id: res.body.runId, status: 'completed' });
  });

  it('paused: not an error, with the text before the tool call and the tool calls awaiting a decision', async () => {
    const id = await scripted([
      { text: 'Let me ask.', toolCalls: [{ name: 'pick', input: { of: 3 } }] },
      { text: 'ok' },
    ]);
    const res = await api.post<TurnResult>(`/v1/sessions/${id}/prompt`, { content: 'choose', wait: true });
    expect(res.body).toMatchObject({ status: 'paused', isError: false, finalResponse: 'Let me ask.' });
    const call = res.body.items.find((i): i is ToolCallItem => i.type === 'tool_call')!;
    expect(res.body.awaiting).toEqual([call]);
    expect(call).toMatchObject({ toolName: 'pick', parameters: { of: 3 } });
    // The record of a paused run shows the usage of its steps so far.
    const run = await api.get<RunView>(`/v1/runs/${res.body.runId}`);
    expect(run.body.status).toBe('paused');
    expect(run.body.usage.outputTokens).toBeGreaterThan(0);
    // The session shows the same tool uses awaiting, as the SSE snapshot does.
    const detail = await api.get<SessionDetail>(`/v1/sessions/${id}`);
    expect(detail.body.inFlight?.awaiting).toEqual([
      { type: 'tool_use', id: call.toolId, name: 'pick', input: { of: 3 } },
    ]);

    const json = await api.post<JsonResult>(`/v1/sessions/${id}/resume`, {
      decision: { type: 'result', content: 'the second' },
      wait: true,
      format: 'json',
    });
    expect(json.body).toEqual({
      session_id: id,
      is_error: false,
      duration_ms: expect.any(Number),
      num_turns: 2,
      result: 'ok',
      run_id: res.body.runId,
      status: 'completed',
      awaiting: [],
    });
  });

  it('answers a paused run in the json form with its awaiting calls', async () => {
    const id = await scripted([{ toolCalls: [{ name: 'pick', input: {} }] }]);
    const res = await api.post<JsonResult>(`/v1/sessions/${id}/prompt`, {
      content: 'choose',
      wait: true,
      format: 'json',
    });
    expect(res.body).toMatchObject({
      is_error: false,
      status: 'paused',
      run_id: expect.any(String),
      awaiting: [{ tool_id: expect.stringMatching(/^toolu_/), tool_name: 'pick', parameters: {} }],
    });
  });

  it('max_steps: completed at its step cap, told apart from a run that finished', async () => {
    const loop = { text: 'again', toolCalls: [{ name: 'nosuch', input: {} }] };
    const id = await scripted([loop, loop, loop]);
    const res = await api.post<TurnResult>(`/v1/sessions/${id}/prompt`, {
      content: 'loop',
      maxSteps: 2,
      wait: true,
    });
    expect(res.body).toMatchObject({ status: 'max_steps', isError: false, numTurns: 2 });
    expect((await api.get<RunView>(`/v1/runs/${res.body.runId}`)).body.status).toBe('completed');
  });

  it('error: an error whose final response is the error', async () => {
    const id = await scripted([{ error: 'model exploded' }]);
    const res = await api.post<TurnResult>(`/v1/sessions/${id}/prompt`, { content: 'go', wait: true });
    expect(res.body).toMatchObject({ status: 'error', isError: true, finalResponse: 'model exploded' });
  });

  it('cancelled: keeps the partial assistant text it streamed', async () => {
    const id = await scripted([{ text: 'one two three four five six seven eight nine ten', delayMs: 80 }]);
    const waiting = api.post<TurnResult>(`/v1/sessions/${id}/prompt`, { content: 'count', wait: true });
    let partial = '';
    for (const deadline = Date.now() + 10_000; Date.now() < deadline && partial.split(' ').length < 3;) {
      const detail = await api.get<SessionDetail>(`/v1/sessions/${id}`);
      const block = detail.body.inFlight?.partial?.content[0];
      partial = block?.type === 'text' ? block.text : '';
    }
    expect((await api.post(`/v1/sessions/${id}/cancel`)).status).toBe(200);
    const res = await waiting;
    expect(res.body).toMatchObject({ status: 'cancelled', isError: true });
    expect(res.body.finalResponse.startsWith(partial)).toBe(true);
    expect(res.body.finalResponse.length).toBeGreaterThan(0);
    expect('one two three four five six seven eight nine ten'.startsWith(res.body.finalResponse)).toBe(true);
    const assistant = res.body.items.filter(
      (i): i is MessageItem => i.type === 'message' && i.role === 'assistant',
    );
    expect(assistant.map((m) => m.text)).toEqual([res.body.finalResponse]);
  });
});

describe('message item ids', () => {
  it('stay the same across a pause and resume: the tree node each message has, or will have', async () => {
    const id = await scripted([
      { text: 'Asking.', toolCalls: [{ name: 'pick', input: {} }] },
      { text: 'Thanks.' },
    ]);
    const paused = await api.post<TurnResult>(`/v1/sessions/${id}/prompt`, { content: 'hi', wait: true });
    const before = paused.body.items.filter((i) => i.type === 'message').map((i) => i.id);
    expect(before).toEqual(['msg_1', 'msg_2']);
    const done = await api.post<TurnResult>(`/v1/sessions/${id}/resume`, {
      decision: { type: 'result', content: 'this one' },
      wait: true,
    });
    const after = done.body.items.filter((i) => i.type === 'message').map((i) => i.id);
    expect(after.slice(0, 2)).toEqual(before);
    const tree = await api.get<TreeView>(`/v1/sessions/${id}/tree`);
    expect(after).toEqual(
      tree.body.nodes.filter((n) => !(n.message.role === 'user' && n.id === 3)).map((n) => `msg_${n.id}`),
    );
  });
});

describe('the SDK’s run()', () => {
  it('exposes the run id, its status and the calls awaiting a decision', async () => {
    const canopy = new Canopy({ baseUrl: t.url, credential: key });
    const id = await scripted([{ toolCalls: [{ name: 'pick', input: { n: 1 } }] }, { text: 'picked' }]);
    const session = canopy.session(id);
    const paused = await session.run('pick one');
    expect(paused).toMatchObject({ status: 'paused', isError: false, runId: expect.any(String) });
    expect(paused.awaiting.map((a) => a.toolName)).toEqual(['pick']);
    expect(paused.toJSON().status).toBe('paused');
    await session.resume({ type: 'result', content: 'one' });
    const run = await canopy.runs.get(paused.runId);
    expect(run.id).toBe(paused.runId);
  });
});

describe('commands that refuse', () => {
  it('refuses an edit after an assistant message with tool uses (422 tool_use_node), the tree untouched', async () => {
    const id = await scripted([
      { text: 'Let me look.', toolCalls: [{ name: 'nosuch', input: {} }] },
      { text: 'Found.' },
    ]);
    await api.post(`/v1/sessions/${id}/prompt`, { content: 'look it up', wait: true });
    const before = (await api.get<TreeView>(`/v1/sessions/${id}/tree`)).body;
    expect(before.nodes.map((n) => n.message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expectError(
      await api.post(`/v1/sessions/${id}/branch`, { nodeId: 2, content: 'instead' }),
      422,
      'tool_use_node',
    );
    expect((await api.get<TreeView>(`/v1/sessions/${id}/tree`)).body).toEqual(before);
    // After the assistant message that answers the tool round, an edit is fine.
    const edit = await api.post<TurnResult>(`/v1/sessions/${id}/branch`, {
      nodeId: 4,
      content: 'next',
      wait: true,
    });
    expect(edit.body.status).toBe('error'); // the script has no third entry: the edit itself was accepted
  });

  it('refuses a resume without toolUseId while several tool uses await, naming them; one needs no id', async () => {
    const id = await scripted([
      {
        toolCalls: [
          { name: 'pick', input: { q: 1 } },
          { name: 'pick', input: { q: 2 } },
        ],
      },
      { text: 'both answered' },
    ]);
    const paused = await api.post<TurnResult>(`/v1/sessions/${id}/prompt`, { content: 'two', wait: true });
    const ids = paused.body.awaiting.map((a) => a.toolId);
    expect(ids).toHaveLength(2);
    const refused = await api.post(`/v1/sessions/${id}/resume`, { decision: { type: 'reject' } });
    expectError(refused, 400, 'bad_request');
    expect(refused.body.error.details).toEqual({ field: 'toolUseId', awaiting: ids });
    for (const toolId of ids) expect(refused.body.error.message).toContain(toolId);
    expect((await api.get<SessionDetail>(`/v1/sessions/${id}`)).body.status).toBe('paused');

    const first = await api.post(`/v1/sessions/${id}/resume`, {
      toolUseId: ids[0],
      decision: { type: 'result', content: 'a' },
    });
    expect(first.status).toBe(202);
    // One left: no id needed.
    const last = await api.post<TurnResult>(`/v1/sessions/${id}/resume`, {
      decision: { type: 'result', content: 'b' },
      wait: true,
    });
    expect(last.body).toMatchObject({ status: 'completed', finalResponse: 'both answered' });
  });
});
