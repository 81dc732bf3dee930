// The frontend protocols on the distributed runtime, with real processes (2 api + 1 worker over the machine's
// Postgres and Redis): a useChat submit on one api whose run the worker executes, its connection dropped mid-stream,
// then resumed from the start on the other api (events through Redis) after an initial load there; a regeneration
// there; and an AG-UI run through the second api on a thread of its own.

import { randomUUID } from 'node:crypto';
import { HttpAgent } from '@ag-ui/client';
import { EventType, type BaseEvent } from '@ag-ui/core';
import { Cluster, eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { canopyTransport, NodeChat, textOf, type ChatMessage } from './support/node-chat';

let cluster: Cluster;
let api: Api;
let key: string;

beforeAll(async () => {
  cluster = await new Cluster({ apis: 2, workers: 1 }).start();
  ({ api, key } = await newTenant({ url: cluster.api(1) } as never, 'distributed frontend protocols'));
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

it('resumes on another api a run the worker executes, after the first api’s stream was dropped', async () => {
  const id = `chat-${randomUUID()}`;
  // Long enough to be in flight through the drop, the load and the resume on a loaded machine (~4 s).
  const prompt = words(200);
  const first = new NodeChat({
    id,
    transport: canopyTransport(cluster.api(1), key, {
      model: 'mock:echo',
      opts: { delayMs: 20, numbered: true },
    }),
  });
  const sent = first.sendMessage({ text: prompt });
  await eventually(() => expect(textOf(first.messages[1]).length).toBeGreaterThan(10), { timeoutMs: 20_000 });
  // The tab goes away mid-stream: its stream closes, the run goes on in the worker.
  await first.stop();
  await sent;
  expect(textOf(first.messages[1]).length).toBeLessThan(`Echo #1: ${prompt}`.length);

  const second = new Api(cluster.api(2), key);
  expect((await second.get(`/v1/sessions/${id}`)).body.status).toBe('busy');
  const loaded = (await second.get(`/v1/ui/chat/${id}/messages`)).body as ChatMessage[];
  expect(loaded.map((m) => m.role)).toEqual(['user']);
  const reloaded = new NodeChat({ id, transport: canopyTransport(cluster.api(2), key), messages: loaded });
  await reloaded.resumeStream();
  expect(reloaded.error).toBeUndefined();
  expect(reloaded.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  expect(textOf(reloaded.messages[1])).toBe(`Echo #1: ${prompt}`);
  expect(reloaded.messages[1]!.metadata).toEqual({ nodeId: 2, versions: [2], versionIndex: 0 });

  // A regeneration through the second api, executed by the worker.
  await reloaded.regenerate();
  expect(reloaded.error).toBeUndefined();
  expect(textOf(reloaded.messages[1])).toBe(`Echo #2: ${prompt}`);
  expect(reloaded.messages[1]!.metadata).toEqual({ nodeId: 3, versions: [2, 3], versionIndex: 1 });
  expect((await api.get(`/v1/sessions/${id}/turns`)).body.data[0].regens).toEqual([2, 3]);
});

it('runs an AG-UI thread through the second api', async () => {
  const agent = new HttpAgent({
    url: `${cluster.api(2)}/v1/ag-ui`,
    headers: { authorization: `Bearer ${key}` },
    threadId: randomUUID(),
  });
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'hello from afar' });
  const events: BaseEvent[] = [];
  await agent.runAgent(
    { forwardedProps: { model: 'mock:echo' } },
    { onEvent: ({ event }) => void events.push(event) },
  );
  expect(events[0]!.type).toBe(EventType.RUN_STARTED);
  expect(events[events.length - 1]!.type).toBe(EventType.RUN_FINISHED);
  expect(agent.messages.map((m) => [m.id, m.role, 'content' in m ? m.content : undefined])).toEqual([
    ['1', 'user', 'hello from afar'],
    ['2', 'assistant', 'Echo: hello from afar'],
  ]);
});
