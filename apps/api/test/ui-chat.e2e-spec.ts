// The AI SDK's chat protocol against the real app, driven by the `ai` package's own chat (AbstractChat with a
// ChatState, as @ai-sdk/react's useChat runs it) over DefaultChatTransport, unchanged but for the credential:
// a submit answered as the UI message stream, the reply's metadata naming its node and versions, a regeneration,
// the initial load (GET …/messages), a stop with its cancel, a resume after the connection dropped mid-stream (the
// same chat, and a reloaded one), a tool call with its output, an approval and a client tool answered by the
// client, and bad requests the transport surfaces as errors.

import { randomUUID } from 'node:crypto';
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  type ChatInit,
  type ChatState,
  type ChatStatus,
  type UIMessage,
} from 'ai';
import { eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

interface Meta {
  nodeId: number | null;
  versions: number[];
  versionIndex: number;
}
type Msg = UIMessage<Meta>;

/** The chat state @ai-sdk/react keeps in React, kept in plain fields. */
class NodeChatState implements ChatState<Msg> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  constructor(public messages: Msg[] = []) {}
  pushMessage = (message: Msg) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: Msg) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

class NodeChat extends AbstractChat<Msg> {
  constructor({ messages, ...init }: ChatInit<Msg>) {
    super({ ...init, state: new NodeChatState(messages) });
  }
}

let t: TestApp;
let api: Api;
let key: string;
/** The responses the transport received (status and headers), newest last. */
const responses: Array<{ url: string; status: number; headers: Headers }> = [];

beforeAll(async () => {
  t = await startTestApp();
  ({ api, key } = await newTenant(t, 'ui chat'));
});

afterAll(async () => {
  await t?.close();
});

const recordingFetch: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  responses.push({ url: String(input), status: res.status, headers: res.headers });
  return res;
};

function transport(credential = key, body: Record<string, unknown> = {}, fetchImpl = recordingFetch) {
  return new DefaultChatTransport<Msg>({
    api: `${t.url}/v1/ui/chat`,
    headers: { authorization: `Bearer ${credential}` },
    body,
    fetch: fetchImpl,
  });
}

const textOf = (m: Msg | undefined) =>
  (m?.parts ?? [])
    .filter((p) => p.type === 'text')
    .map((p) => (p as { text: string }).text)
    .join('');

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

describe('useChat over DefaultChatTransport', () => {
  it('submits a prompt and streams the reply, with its node and versions in the metadata', async () => {
    const id = `chat-${randomUUID()}`;
    const chat = new NodeChat({ id, transport: transport(key, { model: 'mock:echo' }) });
    await chat.sendMessage({ text: 'hello canopy' });
    expect(chat.error).toBeUndefined();
    expect(chat.status).toBe('ready');
    const last = responses[responses.length - 1]!;
    expect(last.status).toBe(200);
    expect(last.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    expect(last.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    const reply = chat.messages[1]!;
    expect(textOf(reply)).toBe('Echo: hello canopy');
    expect(reply.parts.map((p) => p.type)).toEqual(['step-start', 'text']);
    expect(reply.metadata).toEqual({ nodeId: 2, versions: [2], versionIndex: 0 });
    // The session was created on first use with the body's model, and holds the turn.
    const session = await api.get(`/v1/sessions/${id}`);
    expect(session.body).toMatchObject({ id, model: 'mock:echo', status: 'idle' });
    const loaded = await api.get(`/v1/ui/chat/${id}/messages`);
    expect(loaded.status).toBe(200);
    expect(loaded.body).toEqual([
      {
        id: '1',
        role: 'user',
        metadata: { nodeId: 1, versions: [1], versionIndex: 0 },
        parts: [{ type: 'text', text: 'hello canopy' }],
      },
      {
        id: '2',
        role: 'assistant',
        metadata: { nodeId: 2, versions: [2], versionIndex: 0 },
        parts: [{ type: 'step-start' }, { type: 'text', text: 'Echo: hello canopy', state: 'done' }],
      },
    ]);
  });

  it('regenerates a reply: a new version of the turn, on the server, whatever the client holds', async () => {
    const id = `chat-${randomUUID()}`;
    const chat = new NodeChat({
      id,
      transport: transport(key, { model: 'mock:echo', opts: { numbered: true } }),
    });
    await chat.sendMessage({ text: 'one' });
    await chat.sendMessage({ text: 'two' });
    expect(textOf(chat.messages[3])).toBe('Echo #1: two');
    await chat.regenerate();
    expect(chat.error).toBeUndefined();
    expect(chat.messages).toHaveLength(4);
    expect(textOf(chat.messages[3])).toBe('Echo #2: two');
    expect(chat.messages[3]!.metadata).toEqual({ nodeId: 5, versions: [4, 5], versionIndex: 1 });
    // The first turn's reply, regenerated by its id as the initial load gives it (a node id).
    const reloaded = new NodeChat({
      id,
      transport: transport(key),
      messages: (await api.get(`/v1/ui/chat/${id}/messages`)).body as Msg[],
    });
    expect(reloaded.messages.map((m) => m.id)).toEqual(['1', '2', '3', '5']);
    await reloaded.regenerate({ messageId: '2' });
    expect(reloaded.error).toBeUndefined();
    expect(textOf(reloaded.messages[1])).toBe('Echo #2: one');
    expect(reloaded.messages[1]!.metadata).toEqual({ nodeId: 6, versions: [2, 6], versionIndex: 1 });
    const turns = await api.get(`/v1/sessions/${id}/turns`);
    expect(turns.body.data.map((turn: { regens: number[] }) => turn.regens)).toEqual([[2, 6]]);
  });

  it('stops: the transport closes the stream and a cancel ends the run, nothing of it committed', async () => {
    const id = `chat-${randomUUID()}`;
    const chat = new NodeChat({
      id,
      transport: transport(key, { model: 'mock:echo', opts: { delayMs: 20 } }),
    });
    const sent = chat.sendMessage({ text: words(300) });
    await eventually(() => expect(textOf(chat.messages[1]).length).toBeGreaterThan(20));
    await chat.stop();
    const cancelled = await api.post(`/v1/sessions/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    await sent;
    expect(chat.status).toBe('ready');
    expect(chat.error).toBeUndefined();
    await eventually(async () => expect((await api.get(`/v1/sessions/${id}`)).body.status).toBe('idle'));
    const run = await api.get(`/v1/runs/${cancelled.body.runId}`);
    expect(run.body.status).toBe('cancelled');
    expect((await api.get(`/v1/ui/chat/${id}/messages`)).body).toEqual([]);
    // Idle: the reconnect URL answers 204, and the transport's resume leaves the chat as it is.
    const res = await fetch(`${t.url}/v1/ui/chat/${id}/stream`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(res.status).toBe(204);
  });

  it('resumes mid-stream after the connection dropped: the same chat, then a reloaded one', async () => {
    const id = `chat-${randomUUID()}`;
    const prompt = words(60);
    // A connection that drops (a network error) after a few chunks of the first answer.
    let drop = true;
    const droppingFetch: typeof fetch = async (input, init) => {
      const res = await recordingFetch(input, init);
      if (!drop || init?.method !== 'POST' || !res.body) return res;
      drop = false;
      const reader = res.body.getReader();
      let chunks = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (chunks++ >= 6) {
            await reader.cancel();
            controller.error(new TypeError('network error'));
            return;
          }
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    const chat = new NodeChat({
      id,
      transport: transport(key, { model: 'mock:echo', opts: { delayMs: 15 } }, droppingFetch),
    });
    await chat.sendMessage({ text: prompt });
    expect(chat.status).toBe('error');
    const partial = textOf(chat.messages[1]);
    expect(partial.length).toBeLessThan(`Echo: ${prompt}`.length);
    expect((await api.get(`/v1/sessions/${id}`)).body.status).toBe('busy');

    // A reload while the run goes on: the initial load has the prompt in flight, the resume the whole reply.
    const loaded = (await api.get(`/v1/ui/chat/${id}/messages`)).body as Msg[];
    expect(loaded[0]).toMatchObject({ role: 'user', parts: [{ type: 'text', text: prompt }] });
    const reloaded = new NodeChat({ id, transport: transport(key), messages: loaded });
    const reloadedDone = reloaded.resumeStream();

    // The same chat resumes too: the run's stream again from its start, replacing the partial reply.
    await chat.resumeStream();
    expect(chat.error).toBeUndefined();
    expect(chat.status).toBe('ready');
    expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(textOf(chat.messages[1])).toBe(`Echo: ${prompt}`);

    await reloadedDone;
    expect(reloaded.error).toBeUndefined();
    expect(reloaded.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(textOf(reloaded.messages[1])).toBe(`Echo: ${prompt}`);
    expect(reloaded.messages[1]!.metadata).toEqual({ nodeId: 2, versions: [2], versionIndex: 0 });
    // Once idle, a resume finds nothing in flight (204) and changes nothing.
    await reloaded.resumeStream();
    expect(reloaded.messages).toHaveLength(2);
    expect(reloaded.status).toBe('ready');
  });

  it('streams server tool calls with their outputs, reasoning and steps', async () => {
    const id = `chat-${randomUUID()}`;
    const chat = new NodeChat({
      id,
      transport: transport(key, {
        model: 'mock:script',
        opts: {
          serverTools: ['calculator'],
          script: [
            { thinking: 'I should add', toolCalls: [{ name: 'calculator', input: { expression: '2+3' } }] },
            { text: 'It is 5.' },
          ],
        },
      }),
    });
    await chat.sendMessage({ text: 'what is 2+3?' });
    expect(chat.error).toBeUndefined();
    const reply = chat.messages[1]!;
    expect(reply.parts.map((p) => p.type)).toEqual([
      'step-start',
      'reasoning',
      'tool-calculator',
      'step-start',
      'text',
    ]);
    const tool = reply.parts[2] as { state: string; input: unknown; output: unknown };
    expect(tool).toMatchObject({ state: 'output-available', input: { expression: '2+3' } });
    expect(JSON.stringify(tool.output)).toContain('5');
    expect(textOf(reply)).toBe('It is 5.');
    // The initial load shows the same parts.
    const loaded = (await api.get(`/v1/ui/chat/${id}/messages`)).body as Msg[];
    expect(loaded[1]!.parts.map((p) => p.type)).toEqual(reply.parts.map((p) => p.type));
  });

  it('answers a client tool call and an approval with what the client sends back', async () => {
    const id = `chat-${randomUUID()}`;
    const chat: NodeChat = new NodeChat({
      id,
      transport: transport(key, {
        model: 'mock:script',
        tools: [
          {
            name: 'getLocation',
            description: 'Where the user is',
            inputSchema: { type: 'object', properties: {} },
          },
        ],
        opts: {
          serverTools: ['deploy'],
          script: [
            { toolCalls: [{ name: 'getLocation', input: {} }] },
            { toolCalls: [{ name: 'deploy', input: { target: 'staging' } }] },
            { text: 'Deployed from Paris.' },
          ],
        },
      }),
      sendAutomaticallyWhen: (options) =>
        lastAssistantMessageIsCompleteWithToolCalls(options) ||
        lastAssistantMessageIsCompleteWithApprovalResponses(options),
      onToolCall: ({ toolCall }) => {
        if (toolCall.toolName === 'getLocation') {
          void chat.addToolOutput({
            tool: 'getLocation',
            toolCallId: toolCall.toolCallId,
            output: 'Paris',
          } as never);
        }
      },
    });
    await chat.sendMessage({ text: 'deploy from where I am' });
    // The client tool was answered by onToolCall and sent back; the run went on to the approval.
    await eventually(() => {
      const parts = chat.messages[1]?.parts ?? [];
      expect(parts.some((p) => (p as { state?: string }).state === 'approval-requested')).toBe(true);
      expect(chat.status).toBe('ready');
    });
    expect((await api.get(`/v1/sessions/${id}`)).body.status).toBe('paused');
    const approval = chat.messages[1]!.parts.find(
      (p) => (p as { state?: string }).state === 'approval-requested',
    ) as { approval: { id: string } };
    await chat.addToolApprovalResponse({ id: approval.approval.id, approved: true });
    await eventually(() =>
      expect(textOf(chat.messages[chat.messages.length - 1])).toBe('Deployed from Paris.'),
    );
    await eventually(async () => expect((await api.get(`/v1/sessions/${id}`)).body.status).toBe('idle'));
    const loaded = (await api.get(`/v1/ui/chat/${id}/messages`)).body as Msg[];
    const tools = loaded[1]!.parts.filter((p) => p.type.startsWith('tool-')) as Array<{
      type: string;
      state: string;
      output?: unknown;
    }>;
    expect(tools.map((p) => [p.type, p.state])).toEqual([
      ['tool-getLocation', 'output-available'],
      ['tool-deploy', 'output-available'],
    ]);
    expect(tools[0]!.output).toBe('Paris');
  });

  it('surfaces bad requests as errors of the chat, and keeps other users out', async () => {
    const id = `chat-${randomUUID()}`;
    // No model named and no DEFAULT_MODEL: 400, which the transport throws and the chat shows.
    const noModel = new NodeChat({ id, transport: transport(key) });
    await noModel.sendMessage({ text: 'hi' });
    expect(noModel.status).toBe('error');
    expect(noModel.error?.message).toContain('bad_request');
    expect(noModel.error?.message).toContain('model');
    // Alice's chat is not Mallory's: 404 on every route, nothing created or changed.
    const alice = (await api.post('/v1/tokens', { userId: 'alice' })).body.token as string;
    const mallory = (await api.post('/v1/tokens', { userId: 'mallory' })).body.token as string;
    const aliceChat = new NodeChat({ id, transport: transport(alice, { model: 'mock:echo' }) });
    await aliceChat.sendMessage({ text: 'mine' });
    expect(aliceChat.error).toBeUndefined();
    expect((await api.get(`/v1/sessions/${id}`)).body.userId).toBe('alice');
    const malloryChat = new NodeChat({ id, transport: transport(mallory, { model: 'mock:echo' }) });
    await malloryChat.sendMessage({ text: 'not mine' });
    expect(malloryChat.status).toBe('error');
    expect(malloryChat.error?.message).toContain('not_found');
    const asMallory = api.as(mallory);
    expect((await asMallory.get(`/v1/ui/chat/${id}/messages`)).status).toBe(404);
    expect((await asMallory.get(`/v1/ui/chat/${id}/stream`)).status).toBe(404);
    expect(((await api.get(`/v1/ui/chat/${id}/messages`)).body as Msg[]).map((m) => textOf(m))).toEqual([
      'mine',
      'Echo: mine',
    ]);
  });
});
