// The frontend protocols on the embedded runtime (`npm start`'s: PGlite in the process, the in-process queue): a
// useChat reply whose stream the tab dropped, resumed from the start by a reloaded chat, the session created with
// DEFAULT_MODEL; an AG-UI run on a thread of its own, and a branch after the run a parentRunId names.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { HttpAgent } from '@ag-ui/client';
import { EventType, type BaseEvent } from '@ag-ui/core';
import { eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { canopyTransport, NodeChat, textOf, type ChatMessage } from './support/node-chat';
import { startTestApp, type TestApp } from './support/test-app';

let dataDir: string;
let t: TestApp;
let api: Api;
let key: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'canopy-frontend-embedded-'));
  t = await startTestApp({ embeddedDataDir: dataDir, env: { DEFAULT_MODEL: 'mock:echo' } });
  ({ api, key } = await newTenant(t, 'embedded frontend protocols'));
}, 120_000);

afterAll(async () => {
  await t?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it('resumes a useChat reply after the tab dropped its stream; the session takes DEFAULT_MODEL', async () => {
  const id = `chat-${randomUUID()}`;
  // Long enough to be in flight through the drop, the load and the resume (~3 s).
  const prompt = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');
  // No model in the body: the deployment's default; opts only pace the mock model.
  const tab = new NodeChat({ id, transport: canopyTransport(t.url, key, { opts: { delayMs: 15 } }) });
  const sent = tab.sendMessage({ text: prompt });
  await eventually(() => expect(textOf(tab.messages[1]).length).toBeGreaterThan(10), { timeoutMs: 20_000 });
  await tab.stop();
  await sent;
  expect((await api.get(`/v1/sessions/${id}`)).body).toMatchObject({ model: 'mock:echo', status: 'busy' });

  const loaded = (await api.get(`/v1/ui/chat/${id}/messages`)).body as ChatMessage[];
  const reloaded = new NodeChat({ id, transport: canopyTransport(t.url, key), messages: loaded });
  await reloaded.resumeStream();
  expect(reloaded.error).toBeUndefined();
  expect(reloaded.messages.map((m) => [m.role, textOf(m)])).toEqual([
    ['user', prompt],
    ['assistant', `Echo: ${prompt}`],
  ]);
  expect(reloaded.messages[1]!.metadata).toEqual({ nodeId: 2, versions: [2], versionIndex: 0 });
});

it('runs an AG-UI thread', async () => {
  const agent = new HttpAgent({
    url: `${t.url}/v1/ag-ui`,
    headers: { authorization: `Bearer ${key}` },
    threadId: randomUUID(),
  });
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'hello, embedded' });
  const events: BaseEvent[] = [];
  await agent.runAgent({}, { onEvent: ({ event }) => void events.push(event) });
  expect(events[events.length - 1]!.type).toBe(EventType.RUN_FINISHED);
  expect(agent.messages.map((m) => [m.id, m.role, 'content' in m ? m.content : undefined])).toEqual([
    ['1', 'user', 'hello, embedded'],
    ['2', 'assistant', 'Echo: hello, embedded'],
  ]);
});

it('branches an AG-UI thread after the run parentRunId names', async () => {
  const agent = new HttpAgent({
    url: `${t.url}/v1/ag-ui`,
    headers: { authorization: `Bearer ${key}` },
    threadId: randomUUID(),
  });
  // HttpAgent sends no parentRunId of its own: a middleware adds it once it is set.
  const parent: { runId?: string } = {};
  agent.use((input, next) => next.run(parent.runId ? { ...input, parentRunId: parent.runId } : input));
  const runOne = randomUUID();
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'one' });
  await agent.runAgent({ runId: runOne });
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'two' });
  await agent.runAgent();
  parent.runId = runOne;
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'deux' });
  await agent.runAgent();
  expect(agent.messages.map((m) => [m.id, 'content' in m ? m.content : undefined])).toEqual([
    ['1', 'one'],
    ['2', 'Echo: one'],
    ['5', 'deux'],
    ['6', 'Echo: deux'],
  ]);
  const tree = (await api.get(`/v1/sessions/${agent.threadId}/tree`)).body as {
    nodes: Array<{ id: number; parentId: number | null }>;
    path: number[];
  };
  // Run two's turn is still there, a sibling of the branch.
  expect(tree.nodes.map((n) => [n.id, n.parentId])).toEqual([
    [1, null],
    [2, 1],
    [3, 2],
    [4, 3],
    [5, 2],
    [6, 5],
  ]);
  expect(tree.path).toEqual([1, 2, 5, 6]);
  const unknown = await api.post('/v1/ag-ui', {
    threadId: agent.threadId,
    runId: randomUUID(),
    parentRunId: 'never-sent',
    messages: [{ id: randomUUID(), role: 'user', content: 'x' }],
  });
  expect(unknown.status).toBe(404);
  expect(unknown.body.error.details).toEqual({ field: 'parentRunId' });
});
